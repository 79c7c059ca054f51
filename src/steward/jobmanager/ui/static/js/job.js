// A job: its state and reason, its attempts as a timeline, progress and checkpoints, its
// result, its Spark application's UI, the log of an attempt (tail and follow), and cancel.
import {
  POLL_MS, ago, api, badge, duration, errorText, fill, frame, h, isTerminal, missing, panel,
  post, table, unavailable, watchCluster, watchJobs, when,
} from "./common.js";

const jobId = decodeURIComponent(window.location.pathname.split("/").pop());
const main = frame(jobId);
const title = h("h1", { id: "job-title" }, jobId);
const state = h("span", { id: "job-state" });
const cancelButton = h("button", { type: "button", class: "danger", id: "cancel", hidden: true }, "Cancel job");
const notice = h("div", { id: "job-notice" });
const facts = h("dl", { class: "facts", id: "job-facts" });
const result = h("div", { id: "job-result" });
const timeline = h("div", { class: "timeline", id: "timeline" });
const attempts = h("div", { id: "attempts" });
const progress = h("div", { id: "progress" });
const checkpoints = h("div", { id: "checkpoints" });
main.append(
  h("div", { class: "page-head" },
    h("div", {}, title, h("div", { class: "sub mono" }, jobId)),
    h("div", { class: "chips" }, state, cancelButton)),
  notice,
  h("div", { class: "grid cols-2" }, panel("Job", facts), panel("Result", result)),
  panel("Attempts", timeline, attempts),
  h("div", { class: "grid cols-2" }, panel("Progress and stages", progress), panel("Checkpoints", checkpoints)),
);

let job = null;

// ------------------------------------------------------------------ the job

function render() {
  fill(title, job.name || job.job_id);
  fill(state, badge(job.state, "big"));
  cancelButton.hidden = isTerminal(job.state) || job.state === "CANCELLING";
  fill(facts,
    fact("State", badge(job.state)),
    fact("Reason", job.reason || "—"),
    fact("Submitter", job.submitter || "—"),
    fact("Team", job.team || "—"),
    fact("Queue", job.queue == null ? "—" : `${job.queue} (priority ${job.priority ?? 0})`),
    fact("Proxy user", job.proxy_user || "—"),
    fact("Submitted", when(job.submitted_at)),
    fact("Updated", `${when(job.updated_at)} (${ago(job.updated_at)})`),
    fact("Attempts", `${job.attempt_count} (${job.failures} failure(s))`),
    fact("Timeout", job.timeout == null ? "—" : `${duration(job.timeout)} (until ${when(job.deadline)})`),
    fact("Environment", envText(job.env)),
    fact("Read from", job.served_by));
  renderResult();
  renderAttempts();
  fill(progress, job.progress ? json(job.progress) : h("span", { class: "muted" }, "No progress reported."));
  fill(checkpoints, table([
    ["Id", (c) => String(c.checkpoint_id), "num"],
    ["Created", (c) => when(c.created_at)],
    ["Attempt", (c) => String(c.attempt), "num"],
    ["Metadata", (c) => Object.keys(c.metadata).length ? h("code", {}, JSON.stringify(c.metadata)) : "—"],
  ], job.checkpoints, "No checkpoint."));
}

const fact = (name, value) => [h("dt", {}, name), h("dd", {}, value)];
// Secret values come redacted from the API (the rule of secret settings).
const envText = (env) => Object.keys(env || {}).length
  ? h("code", {}, Object.entries(env).map(([name, value]) => `${name}=${value}`).join(" "))
  : "—";
const json = (value) => h("pre", { class: "json" }, JSON.stringify(value, null, 2));

function renderResult() {
  const r = job.result;
  if (!r) {
    fill(result, h("span", { class: "muted" }, isTerminal(job.state) ? "No result recorded." : "Not finished yet."));
    return;
  }
  fill(result,
    h("dl", { class: "facts" },
      fact("Outcome", badge(r.state)),
      fact("Finished", when(r.finished_at)),
      fact("Clean-up", r.cleanup)),
    h("h3", { class: "muted" }, "Value"),
    r.value === null ? h("span", { class: "muted" }, "none") : json(r.value),
    r.error ? [
      h("div", { class: "notice error" }, `${r.error.type}: ${r.error.message}`),
      r.error.traceback ? h("details", {}, h("summary", {}, "Traceback"), h("pre", { class: "log" }, r.error.traceback)) : null,
    ] : null);
}

function renderAttempts() {
  const list = job.attempts;
  const now = Date.now() / 1000;
  const start = Math.min(...list.map((a) => a.started_at ?? now), job.submitted_at ?? now);
  const end = Math.max(...list.map((a) => a.ended_at ?? now), start + 1);
  fill(timeline, list.map((a) => {
    const from = a.started_at ?? now;
    const to = a.ended_at ?? now;
    const seg = h("span", {
      class: `seg ${a.state}`, title: `attempt ${a.number}: ${a.state} on ${a.taskmanager}`,
      "data-left": (from - start) / (end - start), "data-width": (to - from) / (end - start),
    });
    return h("div", { class: "row" }, h("span", { class: "muted" }, `#${a.number} · e${a.epoch}`),
      h("div", { class: "track" }, seg));
  }), list.length ? h("div", { class: "axis" }, h("span", {}, when(start)), h("span", {}, when(end))) : null);
  for (const seg of timeline.querySelectorAll(".seg")) {
    seg.style.left = `${Number(seg.dataset.left) * 100}%`;
    seg.style.width = `${Number(seg.dataset.width) * 100}%`;
  }
  fill(attempts, table([
    ["#", (a) => String(a.number), "num"],
    ["State", (a) => badge(a.state)],
    ["TaskManager", (a) => h("span", { class: "mono" }, a.taskmanager)],
    ["Epoch", (a) => String(a.epoch), "num"],
    ["Start", (a) => when(a.started_at)],
    ["End", (a) => when(a.ended_at)],
    ["Took", (a) => a.started_at ? duration((a.ended_at ?? now) - a.started_at) : "—"],
    ["Cause", (a) => a.cause ? `${a.cause.type}: ${a.cause.message}` : "—"],
    ["Adopted by", (a) => a.adopted_by.length ? a.adopted_by.map((e) => `epoch ${e}`).join(", ") : "—"],
    ["Spark", (a) => sparkLink(a.spark_app)],
  ], [...list].reverse(), "No attempt yet."));
  updateAttemptChoice(list);
}

function sparkLink(app) {
  if (!app) return "—";
  const live = !app.ui_url || !/^https?:\/\//.test(app.ui_url) ? h("span", { class: "mono" }, app.app_id)
    : h("a", { href: app.ui_url, target: "_blank", rel: "noopener noreferrer", class: "spark-ui" },
      `${app.app_id} ↗`);
  if (!app.history_url || !/^https?:\/\//.test(app.history_url)) return live;
  return [live, " ", h("a", { href: app.history_url, target: "_blank", rel: "noopener noreferrer",
    class: "spark-history" }, "history ↗")];
}

async function load() {
  const answer = await api(`/v1/jobs/${encodeURIComponent(jobId)}`);
  if (answer.status !== 200) {
    fill(notice, h("div", { class: "notice error" }, errorText(answer)));
    return;
  }
  job = answer.body;
  render();
}

// ------------------------------------------------------------------ cancel

let armed = null;
cancelButton.addEventListener("click", async () => {
  if (armed === null) {
    cancelButton.textContent = "Confirm cancel";
    cancelButton.classList.add("confirm");
    armed = setTimeout(disarm, 5000);
    return;
  }
  disarm();
  cancelButton.disabled = true;
  const answer = await post(`/v1/jobs/${encodeURIComponent(jobId)}/cancel`);
  cancelButton.disabled = false;
  const ok = answer.status === 202;
  fill(notice, h("div", { class: `notice ${ok ? "info" : "error"}`, id: "cancel-outcome" },
    ok ? "Cancel requested: the attempt gets SIGTERM, then SIGKILL after the grace period." : errorText(answer)));
  load();
});

function disarm() {
  clearTimeout(armed);
  armed = null;
  cancelButton.textContent = "Cancel job";
  cancelButton.classList.remove("confirm");
}

// ------------------------------------------------------------------ the log

const attemptChoice = h("select", { id: "log-attempt" });
const tailInput = h("input", { id: "log-tail", type: "number", min: "1", value: "200" });
const followBox = h("input", { id: "log-follow", type: "checkbox", checked: true });
const logView = h("pre", { class: "log", id: "log" }, "");
const logStatus = h("span", { class: "muted", id: "log-status" });
main.append(h("section", { class: "panel", id: "log-panel" },
  h("h2", {}, "Log"),
  h("div", { class: "log-controls" },
    h("label", {}, "Attempt ", attemptChoice),
    h("label", {}, "Last lines ", tailInput),
    h("label", { class: "check" }, followBox, "Follow"),
    h("button", { type: "button", onclick: () => openLog() }, "Reload"),
    logStatus),
  logView));

let logAbort = null;
let logShown = null;

function updateAttemptChoice(list) {
  if (attemptChoice.options.length === list.length) return;
  const keep = attemptChoice.value;
  fill(attemptChoice, [...list].reverse().map((a) => h("option", { value: a.number }, `#${a.number} (${a.taskmanager})`)));
  if (keep && [...attemptChoice.options].some((o) => o.value === keep)) attemptChoice.value = keep;
  if (logShown === null || attemptChoice.value !== logShown) openLog();
}

async function openLog() {
  if (logAbort) logAbort.abort();
  const number = attemptChoice.value;
  logShown = number || null;
  if (!number) {
    fill(logStatus, "no attempt yet");
    return;
  }
  const controller = new AbortController();
  logAbort = controller;
  const tail = Math.max(1, Number(tailInput.value) || 200);
  const follow = followBox.checked && !isTerminal(job.state);
  const path = `/v1/jobs/${encodeURIComponent(jobId)}/attempts/${number}/log?tail=${tail}${follow ? "&follow=true" : ""}`;
  fill(logStatus, "loading…");
  logView.textContent = "";
  try {
    const answer = await fetch(path, { credentials: "same-origin", signal: controller.signal });
    if (answer.status !== 200) {
      const body = (answer.headers.get("content-type") || "").includes("json") ? await answer.json() : null;
      const shown = { status: answer.status, body };
      if (missing(shown)) fill(logStatus, unavailable("Attempt logs"));
      else fill(logStatus, errorText(shown));
      return;
    }
    fill(logStatus, follow ? "following…" : "");
    const reader = answer.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const atBottom = logView.scrollTop + logView.clientHeight >= logView.scrollHeight - 4;
      logView.append(decoder.decode(value, { stream: true }));
      if (atBottom) logView.scrollTop = logView.scrollHeight;
    }
    if (logAbort === controller) fill(logStatus, follow ? "the attempt ended" : "");
  } catch (error) {
    if (error.name !== "AbortError") fill(logStatus, "the log stream broke; Reload to read it again");
  }
}

followBox.addEventListener("change", () => openLog());
tailInput.addEventListener("change", () => openLog());
attemptChoice.addEventListener("change", () => openLog());

// ------------------------------------------------------------------ live

watchCluster();
await load();
watchJobs(load);
setInterval(() => {
  if (job && !isTerminal(job.state)) load();
}, POLL_MS);
