"""Steward against Apache Flink's own JobManager HA (ZooKeeper), same machine, same run.

The peer (see :mod:`_flink`): Flink from the apache-flink wheels on PyPI, two standalone
JobManagers and a TaskManager started with its own ``bin/jobmanager.sh`` / ``taskmanager.sh``
(``high-availability.type: zookeeper``, checkpoints every second), and one checkpointed
streaming Java job (a rate-limited number generator -> print) submitted detached with
``bin/flink run -d``.
Steward: two JobManagers, a TaskManager and one long-running job, exactly as in
:mod:`spark_peer` (its ``steward_failover`` is reused). Both use the same managed ZooKeeper.

Measured per ZooKeeper session timeout (median of ``--repeats`` each, kinds alternating):

- crash failover: SIGKILL the leading JobManager; seconds from the signal until the other
  JobManager's REST API answers ``/jobs/<id>`` with the job RUNNING on a new ExecutionGraph
  (its ``start-time`` changed: Flink restarts a job when a JobManager takes over). Steward:
  another JobManager answers as leader and shows the job RUNNING, its attempt adopted.
- graceful failover: the same with SIGTERM.
- for Flink also: whether the job was restarted and from which checkpoint, how many records it
  replayed (numbers the print sink wrote twice), how many of the standby's REST requests
  (one every 100 ms) got an answer between the signal and the recovery, and when the new
  leader's log says the job and its task switched to RUNNING (no REST cache in the way).

At session "T" both get a T-second session (the server is capped at T, Flink is configured
with T, Steward with T). "default" leaves each its default: Flink 60 s, Steward 10 s.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from _common import Json, TempZooKeeper, machine, parser, progress, run_main, source, wait_until
from _flink import (
    FLINK_DEFAULT_SESSION_MS,
    FLINK_VERSION,
    ROWS_PER_SECOND,
    FlinkHA,
    FlinkProcess,
    flink_home,
    flink_version_of,
)
from _spark_standalone import zookeeper_capped
from spark_peer import STEWARD_DEFAULT_SESSION, _median, _ratio, steward_failover

KINDS: dict[str, signal.Signals] = {"crash": signal.SIGKILL, "graceful": signal.SIGTERM}
GOALS = {"crash": 2.0, "graceful": 1.0}
POLL = 0.1
"""Seconds between two requests to the standby's REST API while it has no leader."""
SETUP_TIMEOUT = 300.0


# ----------------------------------------------------------------------------- Flink peer


def flink_failover(
    zookeeper: TempZooKeeper, kinds: list[str], repeats: int, session_ms: int | None
) -> Json:
    """Failover trials of Flink's JobManagers; kinds alternate, each ``repeats`` times."""
    session = (session_ms or FLINK_DEFAULT_SESSION_MS) / 1000
    flink = FlinkHA(
        zookeeper.workdir / f"flink-{uuid.uuid4().hex[:6]}", zookeeper.connect_string, session_ms
    )
    trial_timeout = 3 * session + 120.0
    trials: list[Json] = []
    try:
        started = time.monotonic()
        first = flink.start_jobmanager("jm-1")
        flink.wait_leader(SETUP_TIMEOUT)
        flink.wait_rest(first, SETUP_TIMEOUT)
        flink.wait_rest(flink.start_jobmanager("jm-2"), SETUP_TIMEOUT)
        flink.start_taskmanager("tm")
        flink.wait_taskmanager(SETUP_TIMEOUT)
        job_id = flink.submit_job(SETUP_TIMEOUT)
        wait_until(lambda: len(flink.printed()) >= 3, SETUP_TIMEOUT, "the job printing", 0.2)
        progress(f"Flink peer up in {time.monotonic() - started:.1f}s: job {job_id}")
        for round_index in range(repeats):
            for kind in kinds if round_index % 2 == 0 else kinds[::-1]:
                flink.check_alive()
                trials.append(_flink_trial(flink, kind, job_id, trial_timeout))
                progress(
                    f"  flink {kind}: {trials[-1]['seconds']:.2f}s, replayed"
                    f" {trials[-1]['records_replayed']}, standby answered"
                    f" {trials[-1]['standby_answered']}/{trials[-1]['standby_asked']}"
                )
    finally:
        flink.stop()
    return {"trials": trials, "job_id": job_id, "zookeeper_root": flink.root}


def _job(process: FlinkProcess, job_id: str) -> Json | None:
    """``/jobs/<id>`` on ``process`` (None: no answer).

    Its handler serves an ExecutionGraph cached for ``web.refresh-interval`` (3 s), so the
    standby may show the dead leader's graph that long. Polling ``/jobs/overview`` instead
    (not cached) disturbed the peer: every request makes the standby call the old leader's
    Dispatcher, and graceful failovers after a crash took 9-10 s instead of ~3 s. The logs'
    timestamps (:func:`logged_running`) give the uncached times.
    """
    view = process.get(f"/jobs/{job_id}")
    return view if isinstance(view, dict) and "state" in view else None


def _checkpoints(process: FlinkProcess, job_id: str) -> Json:
    view = process.get(f"/jobs/{job_id}/checkpoints")
    return view if isinstance(view, dict) else {}


def _latest(stats: Json, which: str) -> int | None:
    entry = (stats.get("latest") or {}).get(which)
    return int(entry["id"]) if isinstance(entry, dict) and "id" in entry else None


def _flink_trial(flink: FlinkHA, kind: str, job_id: str, timeout: float) -> Json:
    leader = flink.wait_leader(timeout)
    standby = next(j for j in flink.jobmanagers if j is not leader and j.alive())
    flink.wait_rest(standby, timeout)

    # A checkpoint of this ExecutionGraph completed, so a restart has one to restore.
    def checkpointed() -> Json | None:
        view, stats = _job(leader, job_id), _checkpoints(leader, job_id)
        completed, restored = _latest(stats, "completed"), _latest(stats, "restored")
        if view is None or view["state"] != "RUNNING" or completed is None:
            return None
        return view if restored is None or completed > restored else None

    before = wait_until(checkpointed, timeout, "a checkpoint before the kill", 0.2)
    printed_before = len(flink.printed())
    answers = StandbyAnswers(before.get("start-time"))
    signalled, signalled_wall = time.monotonic(), time.time()
    leader.signal(KINDS[kind])

    def recovered() -> Json | None:
        view = _job(standby, job_id)
        return view if answers.record(time.monotonic() - signalled, view) else None

    view = wait_until(recovered, timeout, f"Flink job {job_id} RUNNING on {standby.name}", POLL)
    elapsed = time.monotonic() - signalled
    replayed = _replayed(flink, printed_before, timeout)
    stats = _checkpoints(standby, job_id)
    flink.replace_jobmanager(leader)
    return {
        "kind": kind,
        "seconds": round(elapsed, 3),
        "restarted": view.get("start-time") != before.get("start-time"),
        "start_time_before": before.get("start-time"),
        "start_time_after": view.get("start-time"),
        "restored_checkpoint": _latest(stats, "restored"),
        "records_replayed": replayed,
        **logged_running(standby.log, job_id, signalled_wall),
        **answers.summary(),
        "leader_exit_code": leader.popen.returncode,
    }


class StandbyAnswers:
    """What the standby's REST API said about the job, one request every :data:`POLL` s.

    Until it shows the job on a new ExecutionGraph (another ``start-time``), the standby has
    not taken the job over (no leader yet, or a leader still recovering the job): the
    "leaderless" stretch, in which an answer is the dead leader's view or one without the job.
    After it, the new leader serves the job while restoring it.
    """

    def __init__(self, start_time_before: object) -> None:
        self.before = start_time_before
        self.asked = self.answered = 0
        self.new_graph_after: float | None = None
        self.last_leaderless_answer: float | None = None
        self.leaderless_states: list[str] = []
        self.states_before_running: list[str] = []

    def record(self, elapsed: float, view: Json | None) -> bool:
        """Count one answer (None: none, {}: without the job); True once it shows the new
        graph RUNNING."""
        new_graph = bool(view) and view is not None and view.get("start-time") != self.before
        if new_graph and self.new_graph_after is None:
            self.new_graph_after = round(elapsed, 3)
        if view is not None and new_graph:
            if view.get("state") == "RUNNING":
                return True
            _append_new(self.states_before_running, view.get("state"))
            return False
        if self.new_graph_after is None:
            self.asked += 1
            if view is not None:
                self.answered += 1
                self.last_leaderless_answer = round(elapsed, 3)
                _append_new(self.leaderless_states, view.get("state", "NO JOB"))
        return False

    def summary(self) -> Json:
        return {
            "standby_asked": self.asked,
            "standby_answered": self.answered,
            "standby_last_leaderless_answer_after": self.last_leaderless_answer,
            "standby_leaderless_states": self.leaderless_states,
            "new_graph_seen_after": self.new_graph_after,
            "states_before_running": self.states_before_running,
        }


_LOG_TIME = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "


def logged_running(log: Path, job_id: str, since: float) -> Json:
    """Seconds from ``since`` (epoch) until the new leader's log says the job, and then its
    task, switched to RUNNING: when it happened, without REST caches or polling in the way."""
    text = log.read_text(errors="replace") if log.exists() else ""
    patterns = {
        "log_job_running_after": _LOG_TIME + rf".*Job \S+ \({job_id}\) switched from state \w+ to"
        r" RUNNING",
        "log_task_running_after": _LOG_TIME + r".*switched from INITIALIZING to RUNNING",
    }
    found: Json = {}
    for key, pattern in patterns.items():
        found[key] = None
        for match in re.finditer(pattern, text, re.MULTILINE):
            stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if stamp >= since:
                found[key] = round(stamp - since, 3)
                break
    return found


def _append_new(states: list[str], state: object) -> None:
    """Append ``state`` unless it repeats the last one (a list of the states passed through)."""
    if str(state) not in states[-1:]:
        states.append(str(state))


def replayed_records(numbers: list[int]) -> int | None:
    """Records the restored job printed again: at its first number the sequence falls back.

    ``numbers`` is what the print sink wrote from before the kill on. None if the restored job
    has not printed yet, 0 if it went on exactly where the old one stopped.
    """
    for index in range(1, len(numbers)):
        if numbers[index] <= numbers[index - 1]:
            return numbers[index - 1] - numbers[index] + 1
    return None


def _replayed(flink: FlinkHA, printed_before: int, timeout: float) -> int | None:
    """Wait for the restored job's output: a fall back in the sequence, or two seconds' worth
    of new numbers without one (nothing was replayed). None if it never printed."""
    at_recovery = len(flink.printed())

    def seen() -> tuple[int] | None:
        printed = flink.printed()
        found = replayed_records(printed[max(0, printed_before - 1) :])
        if found is not None:
            return (found,)
        return (0,) if len(printed) > at_recovery + 2 * ROWS_PER_SECOND else None

    try:
        return wait_until(seen, timeout, "the restored job printing", 0.2)[0]
    except TimeoutError:
        return None


# ----------------------------------------------------------------------------- the run


def measure(sessions: list[str], repeats: int, peer_error: str | None) -> Json:
    kinds = list(KINDS)
    per_session: list[Json] = []
    for label in sessions:
        cap_ms = None if label == "default" else int(float(label) * 1000)
        flink_ms = FLINK_DEFAULT_SESSION_MS if cap_ms is None else cap_ms
        steward_session = STEWARD_DEFAULT_SESSION if cap_ms is None else cap_ms / 1000
        progress(f"session {label}: Flink {flink_ms / 1000:g}s, Steward {steward_session:g}s")
        with zookeeper_capped("flink-peer", cap_ms) as zookeeper:
            peer: Json = {"error": peer_error, "trials": []}
            if peer_error is None:
                try:
                    peer = flink_failover(zookeeper, kinds, repeats, cap_ms)
                except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as exc:
                    progress(f"Flink failed: {exc}")
                    peer = {"error": f"{type(exc).__name__}: {exc}"[-3000:], "trials": []}
            ours = steward_failover(zookeeper, kinds, repeats, steward_session)
        per_session.append(
            {
                "session": label,
                "flink_session_seconds": flink_ms / 1000,
                "steward_session_seconds": steward_session,
                "peer": peer,
                "steward": ours,
            }
        )
    return {"per_session": per_session}


def _flink_note(trials: list[Json]) -> str:
    if not trials:
        return "Flink not measured"
    restarted = sum(1 for t in trials if t["restarted"])
    restored = sum(1 for t in trials if t.get("restored_checkpoint") is not None)
    replays = [t["records_replayed"] for t in trials if t.get("records_replayed") is not None]
    asked = sum(t["standby_asked"] for t in trials)
    answered = sum(t["standby_answered"] for t in trials)
    stale = [t["standby_last_leaderless_answer_after"] for t in trials if t["standby_answered"]]
    cached = (
        f" (the old leader's graph of the job, up to {max(stale):g} s after the signal)"
        if stale
        else ""
    )
    replay = (
        f"replayed {statistics.median(replays):g} records (median, {ROWS_PER_SECOND}/s source)"
        if replays
        else "replay not measured"
    )
    logged = [float(t["log_job_running_after"]) for t in trials if t.get("log_job_running_after")]
    tasks = [float(t["log_task_running_after"]) for t in trials if t.get("log_task_running_after")]
    if logged and tasks:
        replay += (
            f"; its log: job RUNNING {statistics.median(logged):g} s, task RUNNING"
            f" {statistics.median(tasks):g} s after the signal (median)"
        )
    return (
        f"Flink restarted the job in {restarted}/{len(trials)} trials (restored from a"
        f" checkpoint in {restored}), {replay}; Flink standby REST answered {answered}/{asked}"
        f" requests before it showed the restarted job{cached}"
    )


def summarise(results: Json) -> list[Json]:
    rows: list[Json] = []
    for entry in results["per_session"]:
        label = entry["session"]
        for kind in KINDS:
            peer_trials = [t for t in entry["peer"]["trials"] if t["kind"] == kind]
            ours = _median(entry["steward"]["trials"], kind)
            peer = _median(peer_trials, kind)
            goal = GOALS[kind]
            restarted = sum(
                t["restarted_attempts"] for t in entry["steward"]["trials"] if t["kind"] == kind
            )
            note = (
                f"Flink session {entry['flink_session_seconds']:g} s, Steward"
                f" {entry['steward_session_seconds']:g} s; {_flink_note(peer_trials)};"
                f" Steward attempts restarted: {restarted}"
            )
            if entry["peer"].get("error"):
                note += f"; Flink failed: {entry['peer']['error'][:200]}"
            rows.append(
                {
                    "figure": f"{kind} failover ({'SIGKILL' if kind == 'crash' else 'SIGTERM'}),"
                    f" session {label}",
                    "steward": ours,
                    "peer": peer,
                    "unit": "s",
                    "ratio": _ratio(ours, peer),
                    "goal": f"< {goal:g} s and faster than Flink",
                    "met": None if ours is None else ours < goal and (peer is None or ours < peer),
                    "note": note,
                }
            )
    return rows


def _prepare_flink() -> tuple[Json, str | None]:
    """Flink's home (downloaded and assembled once) and its description, or why not."""
    how = (
        f"pip download --no-deps apache-flink=={FLINK_VERSION}"
        f" apache-flink-libraries=={FLINK_VERSION}; FLINK_HOME assembled from their"
        " pyflink/{bin,conf,lib,opt,plugins}; bin/jobmanager.sh and bin/taskmanager.sh"
        " start-foreground; a Java DataStream job (DataGeneratorSource -> print) compiled with"
        " javac and submitted with bin/flink run -d"
    )
    peer: Json = {"name": "Apache Flink JobManager HA (ZooKeeper)", "obtained": how}
    try:
        home = flink_home()
    except (RuntimeError, OSError) as exc:
        return {**peer, "version": None, "error": str(exc)}, str(exc)
    return {**peer, "version": flink_version_of(home), "home": str(home)}, None


def main() -> int:
    options = parser(__doc__)
    options.add_argument("--sessions", default=None, help="comma list of seconds or 'default'")
    options.add_argument("--repeats", type=int, default=None)
    options.add_argument(
        "--resummarise",
        type=Path,
        default=None,
        help="measure nothing: re-derive the summary of a stored document",
    )
    args = options.parse_args()
    if args.resummarise is not None:
        stored = json.loads(args.resummarise.read_text())
        stored["summary"] = summarise(stored["results"])
        stored["resummarised"] = "summary re-derived from the stored trials"
        print(json.dumps(stored, indent=2))
        return 0
    sessions = (args.sessions or ("4" if args.quick else "4,default")).split(",")
    for label in sessions:
        if label != "default" and not _is_positive(label):
            options.error(f"--sessions: {label!r} is neither seconds nor 'default'")
    repeats = args.repeats or (1 if args.quick else 3)

    def body() -> Json:
        load_before = machine()["load_average_1m"]
        peer, error = _prepare_flink()
        results = measure(sessions, repeats, error)
        results["quick"] = args.quick
        return {
            "benchmark": "flink_peer",
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "summary": summarise(results),
            "parameters": {"sessions": sessions, "repeats": repeats},
            "results": results,
            "peer": peer,
            "environment": {**machine(), "load_average_1m_at_start": load_before},
            "steward": source(),
        }

    return run_main(body, args.verbose)


def _is_positive(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
