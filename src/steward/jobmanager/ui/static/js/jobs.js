// Every job, filtered by state, name (or id), label and submitter. The filters live in the
// address (?state=RUNNING&q=...), so a filtered list can be linked to and reloaded.
import {
  JOB_STATES, ago, api, badge, errorText, fill, frame, h, jobLink, table, watchCluster,
  watchJobs, when,
} from "./common.js";

const main = frame("Jobs");
const params = new URLSearchParams(window.location.search);
const field = (name, label, placeholder) =>
  h("label", {}, label, h("input", { name, id: `filter-${name}`, placeholder, value: params.get(name) || "" }));
const stateSelect = h("select", { name: "state", id: "filter-state" },
  h("option", { value: "" }, "any state"),
  JOB_STATES.map((s) => h("option", { value: s, selected: params.get("state") === s }, s)));
const form = h("form", { class: "filters", id: "filters" },
  field("q", "Name or id", "word-count"),
  h("label", {}, "State", stateSelect),
  field("label", "Label", "team=data"),
  field("submitter", "Submitter", "alice"),
  h("button", { type: "reset" }, "Clear"));
const count = h("span", { class: "sub", id: "job-count" });
const list = h("div", { id: "job-list" });
main.append(
  h("div", { class: "page-head" }, h("h1", {}, "Jobs"), count),
  h("section", { class: "panel" }, form, list),
);

let jobs = [];

function filters() {
  const data = new FormData(form);
  return Object.fromEntries([...data.entries()].map(([k, v]) => [k, String(v).trim()]));
}

function matches(job, f) {
  if (f.state && job.state !== f.state) return false;
  if (f.q) {
    const q = f.q.toLowerCase();
    if (!job.job_id.toLowerCase().includes(q) && !(job.name || "").toLowerCase().includes(q)) return false;
  }
  if (f.submitter && !(job.submitter || "").toLowerCase().includes(f.submitter.toLowerCase())) return false;
  if (f.label) {
    const [key, value] = f.label.split("=", 2).map((s) => s.trim());
    const labels = job.labels || {};
    if (!(key in labels)) return false;
    if (value !== undefined && labels[key] !== value) return false;
  }
  return true;
}

function render() {
  const f = filters();
  const shown = jobs.filter((job) => matches(job, f)).reverse();
  fill(count, `${shown.length} of ${jobs.length} job(s)`);
  fill(list, table([
    ["Job", (j) => jobLink(j.job_id)],
    ["Name", (j) => j.name || "—"],
    ["State", (j) => badge(j.state)],
    ["Submitter", (j) => j.submitter || "—"],
    ["Submitted", (j) => h("span", { title: when(j.submitted_at) }, ago(j.submitted_at))],
    ["Attempts", (j) => String(j.attempt_count), "num"],
    ["Reason", (j) => j.reason ? h("span", { class: "muted" }, j.reason) : ""],
  ], shown, jobs.length ? "No job matches these filters." : "No job yet."));
  const query = new URLSearchParams(Object.entries(f).filter(([, v]) => v)).toString();
  window.history.replaceState(null, "", query ? `?${query}` : window.location.pathname);
}

async function load() {
  const answer = await api("/v1/jobs");
  if (answer.status !== 200) {
    fill(list, h("div", { class: "unavailable" }, errorText(answer)));
    return;
  }
  jobs = answer.body.jobs;
  // Labels filter only where the API's job views carry them.
  const labels = form.querySelector("#filter-label");
  labels.disabled = jobs.length > 0 && !jobs.some((job) => "labels" in job);
  labels.title = labels.disabled ? "this JobManager's job views carry no labels" : "";
  render();
}

form.addEventListener("input", render);
form.addEventListener("reset", () => setTimeout(render, 0));
form.addEventListener("submit", (event) => event.preventDefault());
watchCluster();
load();
watchJobs(load);
