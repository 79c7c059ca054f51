// The jobs, a page at a time (newest first), searched by the API: state, name prefix, label,
// submitter and team (the API shows a viewer its teams' jobs only). The filters and the page size live in the address (?state=RUNNING&name=...&limit=
// 20), so a search can be linked to and reloaded; the page's cursor does not (a reload shows
// the newest again).
import {
  JOB_STATES, ago, api, badge, errorText, fill, frame, h, jobLink, table, watchCluster,
  watchJobs, when,
} from "./common.js";

const FILTERS = ["state", "name", "label", "submitter", "team"];

const main = frame("Jobs");
const params = new URLSearchParams(window.location.search);
// Jobs a page: 50, or the address's ?limit= (1 to 1000, as the API takes).
const asked = Number.parseInt(params.get("limit") || "", 10);
const PAGE = asked >= 1 && asked <= 1000 ? asked : 50;
const field = (name, label, placeholder) =>
  h("label", {}, label, h("input", { name, id: `filter-${name}`, placeholder, value: params.get(name) || "" }));
const stateSelect = h("select", { name: "state", id: "filter-state" },
  h("option", { value: "" }, "any state"),
  JOB_STATES.map((s) => h("option", { value: s, selected: params.get("state") === s }, s)));
const form = h("form", { class: "filters", id: "filters" },
  field("name", "Name starts with", "word-count"),
  h("label", {}, "State", stateSelect),
  field("label", "Label", "team=data"),
  field("submitter", "Submitter", "alice"),
  field("team", "Team", "data-eng"),
  h("button", { type: "reset" }, "Clear"));
const count = h("span", { class: "sub", id: "job-count" });
const list = h("div", { id: "job-list" });
const newer = h("button", { type: "button", id: "page-newer", disabled: true }, "← Newer");
const older = h("button", { type: "button", id: "page-older", disabled: true }, "Older →");
const pager = h("div", { class: "pager", id: "pager" }, newer, older);
main.append(
  h("div", { class: "page-head" }, h("h1", {}, "Jobs"), count),
  h("section", { class: "panel" }, form, list, pager),
);

// The cursors of the pages shown before this one: "Newer" goes back through them.
let cursors = [];
let cursor = null;
let next = null;

function filters() {
  const data = new FormData(form);
  return Object.fromEntries([...data.entries()].map(([k, v]) => [k, String(v).trim()]));
}

function query(f) {
  const q = new URLSearchParams({ limit: String(PAGE) });
  for (const key of FILTERS) if (f[key]) q.set(key, f[key]);
  if (cursor) q.set("cursor", cursor);
  return q;
}

function labelProblem(f) {
  return f.label && !f.label.includes("=") ? "A label filter is key=value." : null;
}

function render(body, f) {
  const jobs = body.jobs;
  const known = Object.values(body.counts || {}).reduce((n, c) => n + c, 0);
  const first = cursors.length * PAGE;
  const shown = jobs.length ? `jobs ${first + 1} to ${first + jobs.length}` : "no job";
  fill(count, `${shown} of ${known} job(s)${FILTERS.some((k) => f[k]) ? " (filtered)" : ""}`);
  fill(list, table([
    ["Job", (j) => jobLink(j.job_id)],
    ["Name", (j) => j.name || "—"],
    ["State", (j) => badge(j.state)],
    ["Submitter", (j) => j.submitter || "—"],
    ["Team", (j) => j.team || "—"],
    ["Submitted", (j) => h("span", { title: when(j.submitted_at) }, ago(j.submitted_at))],
    ["Attempts", (j) => String(j.attempt_count), "num"],
    ["Reason", (j) => j.reason ? h("span", { class: "muted" }, j.reason) : ""],
  ], jobs, known ? "No job matches these filters." : "No job yet."));
  newer.disabled = cursors.length === 0;
  older.disabled = !body.next;
}

async function load() {
  const f = filters();
  const kept = FILTERS.filter((k) => f[k]).map((k) => [k, f[k]]);
  if (PAGE !== 50) kept.push(["limit", String(PAGE)]);
  const address = new URLSearchParams(kept).toString();
  window.history.replaceState(null, "", address ? `?${address}` : window.location.pathname);
  const problem = labelProblem(f);
  if (problem) {
    fill(list, h("div", { class: "unavailable" }, problem));
    return;
  }
  const answer = await api(`/v1/jobs?${query(f)}`);
  if (answer.status !== 200) {
    fill(list, h("div", { class: "unavailable" }, errorText(answer)));
    return;
  }
  next = answer.body.next;
  render(answer.body, f);
}

// A new search starts from the newest page.
function search() {
  cursors = [];
  cursor = null;
  load();
}

let typing = null;
form.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(search, 250);
});
form.addEventListener("reset", () => setTimeout(search, 0));
form.addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
older.addEventListener("click", () => {
  if (!next) return;
  cursors.push(cursor);
  cursor = next;
  load();
});
newer.addEventListener("click", () => {
  if (!cursors.length) return;
  cursor = cursors.pop();
  load();
});
watchCluster();
load();
watchJobs(load);
