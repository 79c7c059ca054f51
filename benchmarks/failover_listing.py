"""Listing a queued burst through a new leader: SIGKILL of the leader to every job listed.

Issue 22's case: 2,000 jobs submitted to a cluster that runs 2 at a time (one TaskManager with
2 slots), so 1,998 wait in SCHEDULED: the burst an orchestrator sends at midnight. Two
JobManagers and the TaskManager are real processes at the default settings; the jobs are
:data:`_cluster.TICKING` pipelines that run for a day, so the 2 running ones stay running.
Each trial waits until both JobManagers answer ``/readyz``, SIGKILLs the leader, and measures
from the kill:

- ``serves``: until the standby answers ``/readyz`` as the leader (polled every 5 ms);
- ``listed``: until a listing of every job, page by page through ``GET /v1/jobs`` (1,000 a
  page, as ``Client.jobs()`` and ``steward list --all`` read), came whole from the new leader:
  every job id, each answered by it (``served_by``). The listing is retried until it does.

Also the listing alone, once more after the failover, and a check that nothing was lost or
restarted: every job listed, the running ones still on their first attempt. Goal: listed in
under 2 s.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from _cluster import TICKING, BenchCluster, bench_cluster, configured_default
from _common import (
    Json,
    cluster_document,
    parser,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.client import Client
from steward.config.units import parse_duration
from steward.testing.processes import Proc

JOB_SECONDS = 24 * 3600.0
SLOTS = 2
GOAL_S = 2.0
BATCH = 100


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="jobs submitted (2000; quick: 60)")
    cli.add_argument("--repeats", type=int, default=None, help="crashes (3; quick: 1)")
    args = cli.parse_args()
    session = configured_default("high-availability.zookeeper.session-timeout")
    parameters: Json = {
        "jobs": args.jobs or (60 if args.quick else 2000),
        "repeats": args.repeats or (1 if args.quick else 3),
        "slots": SLOTS,
        "jobmanagers": 2,
        "taskmanagers": 1,
        "session_timeout_s": parse_duration(str(session)),
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("failover-listing") as zookeeper:
            trials = run(zookeeper.workdir, zookeeper.connect_string, parameters)
            results = {"trials": trials}
            rows = summary_rows(trials, parameters["jobs"])
            return cluster_document("failover_listing", parameters, results, rows, zookeeper)

    return run_main(body, args.verbose)


def run(workdir: Path, quorum: str, parameters: Json) -> list[Json]:
    pipeline = workdir / "ticking.py"
    pipeline.write_text(TICKING)
    session = parameters["session_timeout_s"]
    jobs = [f"burst-{n:05d}" for n in range(parameters["jobs"])]
    with bench_cluster(workdir, quorum, "listing", session) as cluster:
        deadline = 5 * session + 60
        leader = cluster.start_ha(SLOTS, deadline)
        started = time.perf_counter()
        with Client([leader.address], timeout=120) as client:
            items = [
                {"job_id": job_id, "args": [str(cluster.workdir / "truth.log"), str(JOB_SECONDS)]}
                for job_id in jobs
            ]
            outcomes = client.submit_many(pipeline, items, batch_size=BATCH)
        refused = [o for o in outcomes if isinstance(o, Exception)]
        if refused:
            raise RuntimeError(f"{len(refused)} submissions refused, the first: {refused[0]}")
        progress(f"{len(jobs)} jobs submitted in {time.perf_counter() - started:.1f}s")
        wait_until(lambda: _running(cluster, jobs) == SLOTS, deadline, f"{SLOTS} running", 0.2)
        trials = []
        for _ in range(parameters["repeats"]):
            cluster.wait_jobmanagers(2, deadline)
            trials.append(trial(cluster, jobs, deadline))
            cluster.start_next_jobmanager()
    return trials


def trial(cluster: BenchCluster, jobs: list[str], deadline: float) -> Json:
    crash = cluster.crash_leader(deadline)
    standby, started, serves = crash.successor, crash.started, crash.serves_s
    listings = 0

    def whole() -> list[dict[str, Any]] | None:
        nonlocal listings
        listings += 1
        return _whole_listing(cluster, standby, jobs)

    views = wait_until(whole, deadline, "every job listed by the new leader", 0.005)
    listed = time.perf_counter() - started
    crash.killed.popen.wait(30)
    again = time.perf_counter()
    if _whole_listing(cluster, standby, jobs) is None:
        raise RuntimeError("a listing after the failover missed a job")
    listing_alone = time.perf_counter() - again
    running = [v for v in views if v["state"] == "RUNNING"]
    restarted = [v["job_id"] for v in running if v["attempt_count"] != 1]
    if restarted or len(running) > SLOTS:
        raise RuntimeError(f"running jobs restarted or too many: {restarted}, {len(running)}")
    states: dict[str, int] = {}
    for view in views:
        states[view["state"]] = states.get(view["state"], 0) + 1
    point = {
        "serves_s": round(serves, 4),
        "listed_s": round(listed, 4),
        "listing_alone_s": round(listing_alone, 4),
        "listings_tried": listings,
        "jobs_listed": len(views),
        "states": states,
        "new_leader": standby.id,
    }
    progress(f"crash: {point}")
    return point


def _whole_listing(
    cluster: BenchCluster, proc: Proc, jobs: list[str]
) -> list[dict[str, Any]] | None:
    """Every job of ``jobs`` as ``proc`` lists them, each answered by it; None if one is
    missing or ``proc`` did not answer every page."""
    views = cluster.jobs(proc)
    if views is None:
        return None
    ours = {v["job_id"]: v for v in views if v["served_by"] == proc.id}
    if any(job_id not in ours for job_id in jobs):
        return None
    return [ours[job_id] for job_id in jobs]


def _running(cluster: BenchCluster, jobs: list[str]) -> int:
    leader = cluster.leader()
    views = cluster.jobs(leader) if leader is not None else None
    wanted = set(jobs)
    return sum(1 for v in views or [] if v["job_id"] in wanted and v["state"] == "RUNNING")


def summary_rows(trials: list[Json], jobs: int) -> list[Json]:
    listed = [t["listed_s"] for t in trials]
    serves = [t["serves_s"] for t in trials]
    alone = [t["listing_alone_s"] for t in trials]
    return [
        summary_row(
            f"crash failover, {jobs:,} jobs queued on {SLOTS} slots: SIGKILL to every job listed"
            " through the new leader (median)",
            statistics.median(listed),
            "s",
            goal=f"< {GOAL_S:g} s",
            met=max(listed) < GOAL_S,
            note=f"{len(trials)} crash(es): {', '.join(f'{s:.3f}' for s in listed)} s; serving"
            f" after {', '.join(f'{s:.3f}' for s in serves)} s",
        ),
        summary_row(
            f"one listing of {jobs:,} jobs from the new leader (pages of 1,000, median)",
            statistics.median(alone),
            "s",
            goal="",
            met=None,
            note=", ".join(f"{s:.3f}" for s in alone) + " s",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
