// What every page shares: the header and its notices, calls to the REST API, live updates,
// and small builders. Pages build their DOM with h() (text is never parsed as HTML), so a job's
// name or an error message can hold anything.

export const POLL_MS = 2000;
const TERMINAL = new Set(["FINISHED", "FAILED", "CANCELED"]);
export const JOB_STATES = [
  "SUBMITTED", "INITIALIZING", "SCHEDULED", "RUNNING", "RESTARTING", "CANCELLING",
  "FINISHED", "FAILED", "CANCELED",
];

export const isTerminal = (state) => TERMINAL.has(state);

/** An element: h("a", {href: "/ui/", class: "x", onclick: f}, "text", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace what ``node`` holds with ``children``. */
export function fill(node, ...children) {
  node.replaceChildren();
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return node;
}

/** An API answer: {status, body} (body: the parsed JSON, or null). A 401 goes to the login. */
export async function api(path, options = {}) {
  const answer = await fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { Accept: "application/json", ...(options.headers || {}) },
  });
  // A read refused: the cookie's token expired or was revoked. (A write refused is shown
  // where it was made: the caller may simply lack the role.)
  if (answer.status === 401 && (options.method || "GET") === "GET") {
    window.location.assign("/ui/login");
    throw new Error("not signed in");
  }
  let body = null;
  if ((answer.headers.get("content-type") || "").includes("json")) body = await answer.json();
  return { status: answer.status, body };
}

/** A write: the cookie alone is not enough, the CSRF header says this page sent it. */
export function post(path) {
  return api(path, { method: "POST", headers: { "X-Steward-Csrf": "1" } });
}

/** An endpoint this JobManager does not have (an older version): not an error of the cluster. */
export const missing = (answer) =>
  answer.status === 404 && (!answer.body || answer.body.code === "not_found");

export function unavailable(what) {
  return h("div", { class: "unavailable", "data-unavailable": "" },
    `${what}: not available on this JobManager.`);
}

export function errorText(answer) {
  if (answer.body && answer.body.message) return answer.body.message;
  return `HTTP ${answer.status}`;
}

// ------------------------------------------------------------------ formatting

const pad = (n) => String(n).padStart(2, "0");

/** A Unix time (seconds) as local "YYYY-MM-DD HH:MM:SS". */
export function when(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const d = new Date(seconds * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export const ago = (seconds) =>
  seconds === null || seconds === undefined ? "—" : `${duration(Date.now() / 1000 - seconds)} ago`;

export const badge = (state, extra = "") => h("span", { class: `badge ${state} ${extra}` }, state);

export const jobLink = (jobId, text = jobId) =>
  h("a", { href: `/ui/jobs/${encodeURIComponent(jobId)}`, class: "mono" }, text);

/** A table: columns are [title, cell(row) -> node or text, optional class]. */
export function table(columns, rows, emptyText = "Nothing yet.") {
  const head = h("thead", {}, h("tr", {}, columns.map(([title, , cls]) => h("th", { class: cls }, title))));
  const body = h("tbody", {});
  if (rows.length === 0) {
    body.append(h("tr", {}, h("td", { class: "empty", colspan: columns.length }, emptyText)));
  }
  for (const row of rows) {
    body.append(h("tr", {}, columns.map(([, cell, cls]) => h("td", { class: cls }, cell(row)))));
  }
  return h("table", {}, head, body);
}

export const panel = (title, ...children) => h("section", { class: "panel" }, h("h2", {}, title), ...children);

// ------------------------------------------------------------------ the page's frame

const TABS = [
  ["overview", "/ui/", "Overview"],
  ["jobs", "/ui/jobs", "Jobs"],
  ["taskmanagers", "/ui/taskmanagers", "TaskManagers"],
  ["ha", "/ui/ha", "HA"],
];

/** Header, navigation and the notices' place; returns the element the page fills. */
export function frame(title) {
  const current = document.body.dataset.page === "job" ? "jobs" : document.body.dataset.page;
  const who = h("span", { id: "served-by" });
  const signOut = h("button", { type: "button", onclick: signOutClicked }, "Sign out");
  document.body.append(
    h("header", { class: "top" },
      h("a", { class: "brand", href: "/ui/" }, h("span", { class: "logo" }, "S"), "Steward"),
      h("nav", { class: "tabs" }, TABS.map(([name, href, text]) =>
        h("a", { href, class: name === current ? "current" : "" }, text))),
      h("div", { class: "who" }, who, signOut)),
  );
  const main = h("main", { class: "page" }, h("div", { id: "banner" }));
  document.body.append(main, h("footer", { class: "foot" }, "Steward · every JobManager serves this UI"));
  document.title = `${title} · Steward`;
  return main;
}

async function signOutClicked() {
  try {
    await post("/ui/logout");
  } finally {
    window.location.assign("/ui/login");
  }
}

/** Read /v1/cluster now and every POLL_MS; keep the header and the leader notice true, and
 * hand each view (or null when this JobManager does not answer) to ``onView``. */
export function watchCluster(onView = () => {}) {
  const tick = async () => {
    let view = null;
    let problem = null;
    try {
      const answer = await api("/v1/cluster");
      if (answer.status === 200) view = answer.body;
      else problem = errorText(answer);
    } catch (error) {
      problem = "this JobManager is not answering; retrying";
    }
    showCluster(view, problem);
    onView(view);
  };
  tick();
  setInterval(tick, POLL_MS);
}

let lastView = null;

function showCluster(view, problem) {
  const banner = document.getElementById("banner");
  const who = document.getElementById("served-by");
  document.body.classList.toggle("stale", view === null); // what is shown may be out of date
  if (view === null) {
    // Any JobManager serves this UI: name the others this one knew of.
    const others = lastView
      ? lastView.jobmanagers.filter((jm) => jm.id !== lastView.served_by && /^https?:\/\//.test(jm.address))
      : [];
    fill(banner, h("div", { class: "notice error", "data-notice": "down" },
      `Cannot read the cluster: ${problem}.`,
      others.length ? [" Every JobManager serves this UI: ",
        others.map((jm, i) => [i ? ", " : "", h("a", { href: `${jm.address}/ui/` }, jm.id)])] : ""));
    return;
  }
  lastView = view;
  const leader = view.leader;
  fill(who, `served by ${view.served_by}`,
    leader ? ` · leader ${leader.id} (epoch ${leader.epoch})` : " · no leader");
  if (leader) {
    fill(banner);
  } else {
    fill(banner, h("div", { class: "notice warn", "data-notice": "no-leader" },
      `No leader - reads still served by ${view.served_by}; `,
      "writes (submit, cancel) wait until a new leader is elected."));
  }
}

/** Call ``onChange`` when a job changes: on each event of GET /v1/events (server-sent), or
 * every POLL_MS while this JobManager has no stream (it answers 404) or it is broken.
 * ``load`` is async; it never runs twice at once. */
export function watchJobs(load) {
  // One read at a time: a burst of events while a read of 1,000 jobs is under way costs one
  // more read, not one per event.
  let reading = false;
  let again = false;
  const onChange = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      await load();
    } catch (error) {
      // This JobManager did not answer: the next event or poll tries again.
    } finally {
      reading = false;
    }
    if (again) {
      again = false;
      onChange();
    }
  };
  let debounce = null;
  let pollTimer = null;
  const kick = () => {
    clearTimeout(debounce);
    debounce = setTimeout(onChange, 200);
  };
  const startPolling = () => {
    if (pollTimer === null) pollTimer = setInterval(onChange, POLL_MS);
  };
  const connect = () => {
    if (!("EventSource" in window)) return startPolling();
    const source = new EventSource("/v1/events");
    source.addEventListener("open", () => {
      clearInterval(pollTimer);
      pollTimer = null;
    });
    source.addEventListener("job", kick);
    source.addEventListener("reset", kick);
    source.addEventListener("error", () => {
      // The browser retries by itself unless the answer was not a stream (404, 401, 503).
      if (source.readyState === EventSource.CLOSED) {
        startPolling();
        setTimeout(connect, 30000);
      }
    });
    return source;
  };
  connect();
}
