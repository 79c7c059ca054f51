// High availability: who leads under which epoch, the history of leadership, the JobManagers,
// the ZooKeeper servers, and what `steward doctor` finds (GET /v1/cluster/leadership and
// GET /v1/doctor; a JobManager of an older version, without them, says so in their panel).
import {
  api, badge, errorText, fill, frame, h, missing, panel, table, unavailable, watchCluster, when,
} from "./common.js";

const main = frame("High availability");
const leader = h("dl", { class: "facts", id: "ha-leader" });
const jobmanagers = h("div", { id: "ha-jobmanagers" });
const history = h("div", { id: "ha-history" });
const servers = h("div", { id: "ha-zookeeper" });
const doctor = h("div", { id: "ha-doctor" });
const doctorAgain = h("button", { id: "doctor-again", type: "button", onclick: () => loadDoctor() }, "Check again");
main.append(
  h("div", { class: "page-head" }, h("h1", {}, "High availability")),
  h("div", { class: "grid cols-2" }, panel("Leader", leader), panel("JobManagers", jobmanagers)),
  panel("Leadership history", history),
  h("div", { class: "grid cols-2" }, panel("ZooKeeper servers", servers), panel("Doctor", doctor, doctorAgain)),
);

const fact = (name, value) => [h("dt", {}, name), h("dd", {}, value)];
const isTime = (key) => key === "at" || key.endsWith("_at") || key === "since" || key === "until";

/** A table of whatever records an endpoint answers: a column per key, times shown as times. */
function records(rows, emptyText) {
  const keys = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return table(keys.map((key) => [key.replaceAll("_", " "), (row) => cell(key, row[key])]), rows, emptyText);
}

function cell(key, value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number" && isTime(key)) return when(value);
  if (typeof value === "object") return h("code", {}, JSON.stringify(value));
  return String(value);
}

const listIn = (body, ...names) => {
  if (Array.isArray(body)) return body;
  for (const name of names) if (body && Array.isArray(body[name])) return body[name];
  return null;
};

function showCluster(view) {
  if (!view) return;
  fill(leader, view.leader
    ? [fact("Leader", view.leader.id), fact("Epoch", String(view.leader.epoch)), fact("Address", view.leader.address)]
    : [fact("Leader", badge("none", "warn")), fact("Epoch", "an election is under way")]);
  fill(jobmanagers, table([
    ["Id", (jm) => h("span", { class: "mono" }, jm.id)],
    ["Address", (jm) => jm.address],
    ["Role", (jm) => jm.leader ? badge("leader", "leader") : h("span", { class: "muted" }, "standby")],
  ], view.jobmanagers, "No JobManager registered."));
}

async function loadHistory() {
  const answer = await api("/v1/cluster/leadership");
  if (missing(answer)) return fill(history, unavailable("Leadership history"));
  if (answer.status !== 200) return fill(history, h("div", { class: "unavailable" }, errorText(answer)));
  const rows = listIn(answer.body, "history") || [];
  fill(history, records([...rows].reverse(), "No leadership recorded."));
}

function severityBadge(finding) {
  const level = String(finding.severity || "finding").toLowerCase();
  const cls = level.startsWith("err") || level === "critical" ? "bad" : level.startsWith("warn") ? "warn" : "";
  return badge(level, cls);
}

async function loadDoctor() {
  const answer = await api("/v1/doctor");
  if (missing(answer)) {
    fill(doctor, unavailable("Doctor"));
    fill(servers, unavailable("ZooKeeper servers"));
    return;
  }
  if (answer.status !== 200) return fill(doctor, h("div", { class: "unavailable" }, errorText(answer)));
  const body = answer.body;
  const findings = listIn(body, "findings") || [];
  fill(doctor, findings.length === 0
    ? h("div", { class: "notice info", id: "doctor-ok" }, "No finding: every invariant holds.")
    : findings.map((f) => h("div", { class: "panel finding" },
      h("div", { class: "chips" }, severityBadge(f), h("strong", {}, f.check), h("span", { class: "mono" }, f.subject)),
      h("p", {}, f.message),
      h("p", { class: "muted" }, `What to do: ${f.action}`))));
  const zk = listIn(body, "servers");
  fill(servers, zk ? records(zk, "No server answered.") : h("span", { class: "muted" }, "The doctor names no server."));
}

watchCluster(showCluster);
loadHistory();
loadDoctor();
setInterval(loadHistory, 5000);
// The doctor reads every record of the cluster: asked when the page opens, and on request
// ("Check again"), never on a timer.
