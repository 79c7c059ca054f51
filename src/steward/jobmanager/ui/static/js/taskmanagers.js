// The TaskManagers: their slots (free ones as the leader counts them), the attempts running
// there, and their last heartbeat when this JobManager knows it. Below, the queues their slots
// are shared by (GET /v1/queues: the leader's latest scheduling pass).
import { api, duration, fill, frame, h, jobLink, table, watchCluster, watchJobs, when } from "./common.js";

const main = frame("TaskManagers");
const count = h("span", { class: "sub", id: "tm-count" });
const list = h("div", { id: "tm-list" });
const queueList = h("div", { id: "queue-list" });
main.append(
  h("div", { class: "page-head" }, h("h1", {}, "TaskManagers"), count),
  h("section", { class: "panel" }, list),
  h("p", { class: "muted" }, "Free slots and heartbeats are the leader's figures: a standby shows \"?\" and \"—\"."),
  h("h2", {}, "Queues"),
  h("section", { class: "panel" }, queueList),
);

const share = (x) => `${Math.round(x * 100)}%`;

async function loadQueues() {
  let answer;
  try {
    answer = await api("/v1/queues");
  } catch (error) {
    return; // the cluster's banner already says this JobManager is not answering
  }
  if (answer.status !== 200) return;
  fill(queueList, table([
    ["Queue", (q) => h("span", { class: "mono" }, q.name)],
    ["Guarantee", (q) => `${share(q.guarantee)} (${q.guaranteed_slots})`, "num"],
    ["Maximum", (q) => `${share(q.maximum)} (${q.max_slots})`, "num"],
    ["Weight", (q) => String(q.weight), "num"],
    ["Running", (q) => String(q.running), "num"],
    ["Waiting", (q) => String(q.waiting), "num"],
    ["Slots used", (q) => `${q.slots_used}/${q.max_slots}`, "num"],
    ["Share", (q) => share(q.share), "num"],
  ], answer.body.queues, "No queue known yet."));
}

let cluster = null;
const names = new Map();

// The leader's figure (seconds since the last heartbeat it received); a standby has none.
function heartbeat(tm) {
  const age = tm.heartbeat_age ?? null;
  if (age === null) return h("span", { class: "muted", title: "known to the leader only" }, "—");
  return h("span", { title: when(Date.now() / 1000 - age), "data-heartbeat": "" }, `${duration(age)} ago`);
}

function render() {
  if (!cluster) return;
  fill(count, `${cluster.taskmanagers.length} registered`);
  fill(list, table([
    ["Id", (tm) => h("span", { class: "mono" }, tm.id)],
    ["Address", (tm) => tm.address],
    ["Logs served at", (tm) => tm.http_address || "—"],
    ["Slots", (tm) => String(tm.slots), "num"],
    ["Free", (tm) => tm.free_slots === null ? "?" : String(tm.free_slots), "num"],
    ["Attempts running", (tm) => tm.attempts.length
      ? tm.attempts.map((id) => h("div", {}, jobLink(id), names.get(id) ? h("span", { class: "muted" }, ` ${names.get(id)}`) : ""))
      : h("span", { class: "muted" }, "none")],
    ["Last heartbeat", heartbeat],
  ], cluster.taskmanagers, "No TaskManager registered."));
}

async function loadNames() {
  // The names of the running jobs (a TaskManager runs those); a page at most, not every job.
  const answer = await api("/v1/jobs?state=RUNNING&limit=1000");
  if (answer.status !== 200) return;
  for (const job of answer.body.jobs) names.set(job.job_id, job.name);
  render();
}

watchCluster((view) => {
  if (view) cluster = view;
  render();
  loadQueues();
});
loadNames();
watchJobs(loadNames);
