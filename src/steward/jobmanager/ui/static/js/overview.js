// The overview: the leader and its epoch, the JobManagers, the TaskManagers and their slots,
// the jobs by state, and the latest jobs. Live: the cluster is read every 2 s, the jobs on
// every event.
import {
  JOB_STATES, ago, api, badge, errorText, fill, frame, h, jobLink, panel, table, watchCluster,
  watchJobs, when,
} from "./common.js";

const main = frame("Overview");
const head = h("div", { class: "page-head" }, h("h1", {}, "Overview"), h("span", { class: "sub", id: "cluster-id" }));
const stats = h("div", { class: "grid cols-4", id: "stats" });
const states = h("div", { class: "chips", id: "job-states" });
const jobmanagers = h("div", { id: "jobmanagers" });
const taskmanagers = h("div", { id: "taskmanagers" });
const recent = h("div", { id: "recent-jobs" });
main.append(
  head,
  stats,
  h("div", { class: "grid cols-2" },
    panel("JobManagers", jobmanagers),
    panel("TaskManagers", taskmanagers)),
  panel("Jobs by state", states),
  h("section", { class: "panel" },
    h("h2", {}, "Latest jobs", h("a", { href: "/ui/jobs" }, "All jobs →")), recent),
);

let cluster = null;
let jobs = null; // the latest few, newest first
let counts = null; // every job known, by state

function stat(label, value, detail, id) {
  return h("div", { class: "panel stat", id },
    h("div", { class: "label" }, label), h("div", { class: "value" }, value),
    h("div", { class: "detail" }, detail));
}

function render() {
  const slots = cluster ? cluster.taskmanagers.reduce((n, tm) => n + tm.slots, 0) : 0;
  const known = cluster ? cluster.taskmanagers.filter((tm) => tm.free_slots !== null) : [];
  const used = known.reduce((n, tm) => n + (tm.slots - tm.free_slots), 0);
  const running = counts ? counts.RUNNING || 0 : 0;
  const total = counts ? Object.values(counts).reduce((n, c) => n + c, 0) : null;
  const leader = cluster && cluster.leader;
  fill(stats,
    stat("Leader", leader ? leader.id : "none",
      leader ? `epoch ${leader.epoch} · ${leader.address}` : "an election is under way", "stat-leader"),
    stat("JobManagers", cluster ? cluster.jobmanagers.length : "—",
      cluster ? `this page: ${cluster.served_by}` : "", "stat-jobmanagers"),
    stat("Slots in use", cluster ? `${known.length ? used : "?"} / ${slots}` : "—",
      cluster ? `${cluster.taskmanagers.length} TaskManager(s)` : "", "stat-slots"),
    stat("Jobs", counts ? total : "—", counts ? `${running} running` : "", "stat-jobs"));
  if (cluster) {
    fill(head.querySelector("#cluster-id"), `cluster ${cluster.cluster_id}`);
    fill(jobmanagers, table([
      ["Id", (jm) => h("span", { class: "mono" }, jm.id)],
      ["Address", (jm) => jm.address],
      ["Role", (jm) => jm.leader ? badge("leader", "leader") : h("span", { class: "muted" }, "standby")],
    ], cluster.jobmanagers, "No JobManager registered."));
    fill(taskmanagers, table([
      ["Id", (tm) => h("span", { class: "mono" }, tm.id)],
      ["Slots", (tm) => slotsOf(tm), "num"],
      ["Running", (tm) => tm.attempts.length ? tm.attempts.map((id) => [jobLink(id), " "]) : "—"],
    ], cluster.taskmanagers, "No TaskManager registered."));
  }
  if (jobs) {
    const byState = Object.fromEntries(JOB_STATES.map((s) => [s, (counts || {})[s] || 0]));
    fill(states, Object.entries(byState).map(([state, n]) =>
      h("a", { class: "chip", href: `/ui/jobs?state=${state}`, "data-state": state }, badge(state), h("strong", {}, n))));
    const latest = jobs;
    fill(recent, table([
      ["Job", (j) => jobLink(j.job_id)],
      ["Name", (j) => j.name || "—"],
      ["State", (j) => badge(j.state)],
      ["Submitted", (j) => h("span", { title: when(j.submitted_at) }, ago(j.submitted_at))],
    ], latest, "No job yet: submit one with steward submit."));
  }
}

function slotsOf(tm) {
  if (tm.free_slots === null) return `${tm.slots}`;
  const used = tm.slots - tm.free_slots;
  return h("span", {}, `${used} / ${tm.slots}`,
    h("div", { class: "bar" }, h("span", { style: null, "data-width": used / Math.max(1, tm.slots) })));
}

async function loadJobs() {
  const answer = await api("/v1/jobs?limit=8");
  if (answer.status === 200) {
    jobs = answer.body.jobs;
    counts = answer.body.counts || {};
  }
  else fill(recent, h("div", { class: "unavailable" }, errorText(answer)));
  render();
  sizeBars();
}

// The bars' widths are set through the DOM: the policy admits no inline style attribute.
function sizeBars() {
  for (const bar of document.querySelectorAll("[data-width]")) {
    bar.style.width = `${Math.round(Number(bar.dataset.width) * 100)}%`;
  }
}

watchCluster((view) => {
  if (view) cluster = view;
  render();
  sizeBars();
});
loadJobs();
watchJobs(loadJobs);
