"""The crash failover floor: SIGKILL of the leader to a serving leader, and what it is made of.

Default settings (session timeout, ``high-availability.crash-detection``), two JobManagers and
one TaskManager as real processes, a handful of long-running :data:`_cluster.TICKING` jobs.
Each trial waits until both JobManagers answer ``/readyz`` (the standby could take over at
once), SIGKILLs the leader, polls the standby's ``/readyz`` every 5 ms until it answers as the
leader, then splits the time (wall clock, all on this machine) into:

- ``detection``: the kill until the standby's crash detector removed the dead leader's latch
  (its log line; the probe interval until the first refusal plus the refusal window);
- ``election``: until the standby was granted (``leader/history``'s ``granted_at``: the epoch
  bumped and ``leader/info`` published);
- ``recovery``: until the new term had recovered every job (``ready_at``: graphs read, leases
  read, attempts adopted);
- ``answer``: until ``/readyz`` answered 200 as the leader (this poller's own share included).

Also: until every job shows RUNNING under the new leader with its attempt adopted.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from _cluster import TICKING, BenchCluster, bench_cluster, configured_default
from _common import (
    Json,
    cluster_document,
    parser,
    progress,
    run_main,
    summary,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.client import Client
from steward.testing.processes import Proc

JOB_SECONDS = 24 * 3600.0
PHASES = ("detection", "election", "recovery", "answer")
REMOVED = "refuses connections: removed its latch"
GOAL_S = 0.3


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="running jobs (3)")
    cli.add_argument("--repeats", type=int, default=None, help="crashes (7; quick: 2)")
    args = cli.parse_args()
    session = configured_default("high-availability.zookeeper.session-timeout")
    parameters: Json = {
        "jobs": args.jobs or 3,
        "repeats": args.repeats or (2 if args.quick else 7),
        "jobmanagers": 2,
        "taskmanagers": 1,
        "session_timeout_default": session,
        "session_timeout_s": _seconds(session),
        "crash_detection_default": configured_default("high-availability.crash-detection"),
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("failover-floor") as zookeeper:
            trials = run(zookeeper.workdir, zookeeper.connect_string, parameters)
            results = {"trials": trials, "phases": _phases(trials)}
            return cluster_document(
                "failover_floor", parameters, results, summary_rows(trials), zookeeper
            )

    return run_main(body, args.verbose)


def run(workdir: Path, quorum: str, parameters: Json) -> list[Json]:
    pipeline = workdir / "ticking.py"
    pipeline.write_text(TICKING)
    session = parameters["session_timeout_s"]
    with bench_cluster(workdir, quorum, "floor", session, **{"log.format": "json"}) as cluster:
        deadline = 5 * session + 30
        leader = cluster.start_ha(parameters["jobs"], deadline)
        jobs = [f"tick-{n}" for n in range(parameters["jobs"])]
        with Client([leader.address], timeout=60) as client:
            for job_id in jobs:
                truth = cluster.workdir / f"{job_id}.log"
                client.submit(pipeline, args=[str(truth), str(JOB_SECONDS)], job_id=job_id)
        trials = []
        for _ in range(parameters["repeats"]):
            cluster.wait_jobmanagers(2, deadline)
            wait_until(lambda: _all_running(cluster, jobs), deadline, "every job RUNNING", 0.05)
            trials.append(trial(cluster, jobs, deadline))
            cluster.start_next_jobmanager()
    return trials


def trial(cluster: BenchCluster, jobs: list[str], deadline: float) -> Json:
    crash = cluster.crash_leader(deadline)
    standby, killed_wall, started = crash.successor, crash.killed_at, crash.started
    serves = crash.serves_s
    wait_until(lambda: _all_running(cluster, jobs, standby), deadline, "all adopted", 0.01)
    all_running = time.perf_counter() - started
    crash.killed.popen.wait(30)
    # The new leader records its term once it has recovered and started its other work, which
    # can be after every job shows RUNNING: wait for its own entry, never read the last one's.
    wait_until(lambda: _own_term(cluster, standby) is not None, deadline, "term recorded", 0.01)
    term = _own_term(cluster, standby)
    assert term is not None
    removed = _logged_at(standby, REMOVED, after=killed_wall)
    marks = [killed_wall, removed, term["granted_at"], term["ready_at"], killed_wall + serves]
    phases = {
        name: round(max(0.0, later - earlier), 4) if later and earlier else None
        for name, earlier, later in zip(PHASES, marks[:-1], marks[1:], strict=True)
    }
    recovery_step = _logged_value(standby, "recovery done epoch=", "seconds=")
    progress(f"crash: recovery step {recovery_step}s")
    progress(f"crash: serves {serves:.3f}s, all running {all_running:.3f}s, phases {phases}")
    return {
        "serves_s": round(serves, 4),
        "all_running_s": round(all_running, 4),
        "phases_s": phases,
        "recovery_step_s": recovery_step,
        "adopted": term["adopted"],
        "new_leader": standby.id,
    }


def _own_term(cluster: BenchCluster, proc: Proc) -> Json | None:
    """``proc``'s entry in the leadership history, once it recorded one (the latest)."""
    history = cluster.get_json(proc, "/v1/cluster/leadership")["history"]
    last: Json | None = history[-1] if history else None
    return last if last is not None and last["contender"] == proc.id else None


def _all_running(cluster: BenchCluster, jobs: list[str], proc: Proc | None = None) -> bool:
    """Every job RUNNING with one attempt, served by ``proc`` (the leader if None)."""
    proc = proc or cluster.leader()
    views = cluster.jobs(proc) if proc is not None else None
    if views is None:
        return False
    by_id = {v["job_id"]: v for v in views if v["served_by"] == proc.id}  # type: ignore[union-attr]
    return all(
        j in by_id and by_id[j]["state"] == "RUNNING" and by_id[j]["attempt_count"] == 1
        for j in jobs
    )


def _logged_at(proc: Proc, text: str, *, after: float) -> float | None:
    """Wall time of the first JSON log line of ``proc`` containing ``text`` after ``after``."""
    for line in proc.log_text().splitlines():
        if text not in line:
            continue
        try:
            record: dict[str, Any] = json.loads(line)
        except ValueError:
            continue
        at = datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()
        if at >= after - 0.001:
            return at
    return None


def _logged_value(proc: Proc, text: str, key: str) -> float | None:
    """The number after ``key`` in the last log line of ``proc`` containing ``text``."""
    lines = [line for line in proc.log_text().splitlines() if text in line]
    if not lines or key not in lines[-1]:
        return None
    return float(lines[-1].split(key, 1)[1].split()[0].rstrip('",'))


def _phases(trials: list[Json]) -> Json:
    found: Json = {}
    for name in PHASES:
        values = [t["phases_s"][name] for t in trials if t["phases_s"][name] is not None]
        if values:
            found[name] = summary(values, 4)
    return found


def summary_rows(trials: list[Json]) -> list[Json]:
    serves = [t["serves_s"] for t in trials]
    running = [t["all_running_s"] for t in trials]
    median = statistics.median(serves)
    rows = [
        summary_row(
            "crash failover floor: SIGKILL to a serving leader, default settings",
            median,
            "s",
            goal=f"< {GOAL_S:g} s",
            met=median < GOAL_S,
            note=f"median of {len(serves)} (min {min(serves):.3f}, max {max(serves):.3f});"
            f" every job RUNNING and adopted after {statistics.median(running):.3f} s",
        )
    ]
    for name, values in _phases(trials).items():
        rows.append(
            summary_row(
                f"crash failover floor, phase: {name}",
                values["median"],
                "s",
                goal="",
                met=None,
                note=f"median of {values['n']} (max {values['max']:.3f} s)",
            )
        )
    return rows


def _seconds(value: object) -> float:
    text = str(value).strip()
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    return float(text.rstrip("s"))


if __name__ == "__main__":
    raise SystemExit(main())
