"""Failover at scale: a leader SIGKILLed with N running jobs held by simulated TaskManagers.

For each point (jobs, TaskManagers) in a fresh namespace, at the default settings:

1. this process, as a leader would, writes N job graphs and status records (the writer of
   ``recovery_scaling.py``, not timed), then the TaskManager simulator (``_tm_simulator.py``:
   real registrations, real fenced execution leases and real HTTP heartbeats, no processes)
   registers the TaskManagers and takes one lease per job, attempt 1, spread round-robin;
2. JobManager ``jm-1`` starts and recovers them all (its figure: ``cold_recovery_s``), the
   simulated TaskManagers heartbeat to it (``heartbeat``: the leader's CPU seconds, user +
   system, over a window of steady heartbeats, per heartbeat answered and as a share of one
   core), and its RSS is read;
3. ``jm-2`` starts as a standby; once both answer ``/readyz``, ``jm-1`` is SIGKILLed and:
   ``ready_s`` is the kill until ``jm-2``'s ``/readyz`` answers 200 as the leader (its term
   ready: every job recovered), ``recovery_s`` its own "recovery done" figure (per job:
   ``recovery_ms_per_job``), ``all_told_s`` until every simulated TaskManager got a reply of
   the new epoch (every adoption delivered); ``adopted``/``restarted``/``failed`` from its
   recovery summary, and the start and cancel commands the simulated TaskManagers received
   after the kill (goal: N adopted, nothing restarted, failed, started or cancelled).

Goals (issue 22): failover with 10,000 running jobs under 2 s; heartbeats of 1,000
TaskManagers under 25 % of one core.
"""

from __future__ import annotations

import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

from _cluster import ZK_ROOT, BenchCluster, bench_cluster, configured_default, rss_mib
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from _heartbeat_cost import heartbeat_cost
from _tm_simulator import (
    QUICK_IDLE_HOLD,
    TaskManagerSimulator,
    default_idle_hold,
    simulated_taskmanagers,
)
from recovery_scaling import persist_jobs
from steward.ha.session import Session
from steward.security.credentials import INTERNAL_KEY, read_secret
from steward.testing.processes import Proc

RECOVERY_DONE = re.compile(r"recovery done epoch=(\d+) seconds=([0-9.]+) (.*)$", re.MULTILINE)
LISTED = re.compile(r"recovery listed epoch=(\d+) seconds=([0-9.]+)")
WARM = re.compile(r"recovery warm epoch=(\d+) seconds=([0-9.]+) held=(-?\d+)")
WROTE = re.compile(r"recovery wrote records epoch=(\d+) seconds=([0-9.]+)")
WROTE_LATE = re.compile(r"recovery wrote records late epoch=(\d+) seconds=([0-9.]+)")
LATER = re.compile(r"recovery wrote records epoch=(\d+) seconds=[0-9.]+ later=([1-9]\d*)")
SESSION_TIMEOUT = 10.0
JOBS_PER_TM = 10
SIM_SESSIONS = 40
"""ZooKeeper sessions of the simulator at most: ZooKeeper takes 60 connections from one address
(``maxClientCnxns``), and the JobManagers and this process need some too."""
FAILOVER_GOAL_S = 2.0
HANDOFF_GOAL_S = {"kill": FAILOVER_GOAL_S, "term": 1.0}
HANDOFF_SIGNAL = {"kill": signal.SIGKILL, "term": signal.SIGTERM}
HEARTBEAT_GOAL = 0.25
HEARTBEAT_GOAL_AT = 1000
"""Issue 22: the heartbeats of this many TaskManagers under :data:`HEARTBEAT_GOAL` of a core."""
CPU_WINDOW_S = 10.0


def recovery_line(proc: Proc, epoch_at_least: int = 0) -> tuple[int, float, dict[str, str]]:
    """``proc``'s "recovery done" figures: its epoch, seconds and summary."""

    def found() -> re.Match[str] | None:
        for match in RECOVERY_DONE.finditer(proc.log.read_text(errors="replace")):
            if int(match.group(1)) >= epoch_at_least:
                return match
        return None

    match = wait_until(found, 30.0, f"{proc.id}'s recovery line")
    summary = dict(pair.split("=", 1) for pair in match.group(3).split())
    return int(match.group(1)), float(match.group(2)), summary


def listed_s(proc: Proc, epoch: int, line: re.Pattern[str] = LISTED) -> float | None:
    """Seconds ``proc``'s recovery of ``epoch`` spent on its listings (members, leases, graph
    ids, results) before the jobs' own reads (or on what ``line`` logs: the records written
    before "ready", and after it); None from a version that does not log it."""
    for match in line.finditer(proc.log.read_text(errors="replace")):
        if int(match.group(1)) == epoch:
            return float(match.group(2))
    return None


def recovery_lines(proc: Proc, epoch: int) -> list[str]:
    """``proc``'s log lines of its recovery of ``epoch`` (the listing, each chunk's reads and
    adoptions, the warm copy): where the takeover's time went, kept with the figures."""
    mark = f"epoch={epoch} "
    return [
        line
        for line in proc.log.read_text(errors="replace").splitlines()
        if "recovery " in line and mark in line
    ][:40]


def warm_held(proc: Proc, epoch: int) -> int | None:
    """How many jobs' pointers and records ``proc``'s recovery of ``epoch`` took from its
    warm copy (-1: none vouched for); None from a version without one."""
    for match in WARM.finditer(proc.log.read_text(errors="replace")):
        if int(match.group(1)) == epoch:
            return int(match.group(3))
    return None


def late_records_s(proc: Proc, epoch: int) -> float | None:
    """Seconds ``proc``'s term of ``epoch`` spent writing, once ready, the records of the
    jobs it recovered from them (waited for); None if it wrote none late."""
    if listed_s(proc, epoch, LATER) is None:
        return None

    def written() -> bool:
        return listed_s(proc, epoch, WROTE_LATE) is not None

    wait_until(written, 120.0, "the late records")
    return listed_s(proc, epoch, WROTE_LATE)


def everyone_told(simulator: TaskManagerSimulator, epoch: int) -> bool:
    return all(tm.epoch >= epoch for tm in simulator.taskmanagers)


def measure(
    zookeeper: TempZooKeeper,
    jobs: int,
    taskmanagers: int,
    per_session: int | None,
    window: float,
    *,
    failover: bool = True,
    handoff: str = "kill",
    idle_hold: float | None = None,
) -> Json:
    """``idle_hold``: the cluster's ``heartbeat.idle-hold`` (None: the code's own default)."""
    cluster_id = f"failover-scale-{jobs}"
    extra = {} if idle_hold is None else {"heartbeat.idle-hold": f"{idle_hold:g}s"}
    with bench_cluster(
        zookeeper.workdir, zookeeper.connect_string, cluster_id, SESSION_TIMEOUT, **extra
    ) as cluster:
        return _measure(
            cluster,
            zookeeper,
            jobs,
            taskmanagers,
            per_session=per_session,
            window=window,
            failover=failover,
            handoff=handoff,
            idle_hold=idle_hold,
        )


def _measure(
    cluster: BenchCluster,
    zookeeper: TempZooKeeper,
    jobs: int,
    taskmanagers: int,
    *,
    per_session: int | None,
    window: float,
    failover: bool,
    handoff: str = "kill",
    idle_hold: float | None = None,
) -> Json:
    root = f"{ZK_ROOT}/{cluster.settings['high-availability.cluster-id']}"
    storage = cluster.settings["high-availability.storage-dir"]
    access = cluster.zookeeper_access
    written = persist_jobs(zookeeper.connect_string, root, storage, jobs, access)
    credential = read_secret(Path(cluster.settings[INTERNAL_KEY]), INTERNAL_KEY)
    per_session = per_session or -(-taskmanagers // SIM_SESSIONS)
    with simulated_taskmanagers(
        zookeeper.connect_string,
        root,
        access,
        count=taskmanagers,
        slots=-(-jobs // taskmanagers),
        internal_credential=credential,
        tms_per_session=per_session,
        session_timeout=SESSION_TIMEOUT,
    ) as simulator:
        if idle_hold is not None:
            simulator.idle_hold = idle_hold
        started = time.perf_counter()
        simulator.register()
        simulator.hold([f"job-{i:05d}" for i in range(jobs)], epoch=_epoch(cluster, root))
        held = time.perf_counter() - started
        progress(
            f"{jobs} jobs written in {written:.1f}s, {taskmanagers} TMs hold them ({held:.1f}s)"
        )
        try:
            return _failover(
                cluster,
                simulator,
                (jobs, taskmanagers),
                (written, held),
                window,
                failover=failover,
                handoff=handoff,
            )
        except Exception:
            for proc in cluster.procs:
                progress(f"{proc.id}'s log ends:\n{proc.log_tail(3000)}")
            raise


def _per_job_ms(seconds: str | None, jobs: int) -> float | None:
    return None if seconds is None else round(float(seconds) / jobs * 1000, 4)


def _epoch(cluster: BenchCluster, root: str) -> int:
    """The epoch the writer left in ``leader/epoch`` (the leases are fenced by it)."""
    quorum = cluster.settings["high-availability.zookeeper.quorum"]
    with Session(quorum, root, access=cluster.zookeeper_access, name="bench-epoch") as session:
        data, _stat = session.client.get(session.layout.leader_epoch)
    return int(data.decode())


def _failover(
    cluster: BenchCluster,
    simulator: TaskManagerSimulator,
    size: tuple[int, int],
    setup: tuple[float, float],
    window: float,
    *,
    failover: bool = True,
    handoff: str = "kill",
) -> Json:
    """Measure jm-1's heartbeats, then (``failover``) signal it (``handoff``: SIGKILL, or
    SIGTERM for a graceful handoff) and measure jm-2's takeover."""
    (jobs, taskmanagers), (written, held) = size, setup
    first = cluster.start_jobmanager("jm-1")
    simulator.start([first.address])
    wait_until(
        lambda: cluster.check_alive() or cluster.serving_leader(first),
        300 + jobs * 0.1,
        "jm-1 leads",
    )
    epoch1, cold, summary1 = recovery_line(first)
    wait_until(
        lambda: everyone_told(simulator, epoch1), 60.0, "every TM told epoch 1", interval=0.05
    )
    heartbeats = heartbeat_cost(first, simulator, window)
    rss_first = first.rss_bytes()
    if not failover:
        point = {
            "jobs": jobs,
            "taskmanagers": taskmanagers,
            "cold_recovery_s": cold,
            "leader_rss_mib": rss_mib(rss_first),
            "heartbeat": heartbeats,
        }
        progress(f"{jobs} jobs, heartbeats only: {point}")
        return point
    second = cluster.start_jobmanager("jm-2")
    simulator.addresses.append(second.address)
    cluster.wait_jobmanagers(2, 120.0)
    commands_before = Counter(simulator.tally.commands)
    cpu_before = psutil.Process(second.pid).cpu_times()
    killed = time.perf_counter()
    first.signal(HANDOFF_SIGNAL[handoff])
    wait_until(lambda: cluster.serving_leader(second), 120.0, "jm-2 serves", interval=0.005)
    ready = time.perf_counter() - killed
    cpu_after = psutil.Process(second.pid).cpu_times()
    cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    epoch2, recovery, summary2 = recovery_line(second, epoch1 + 1)
    wait_until(
        lambda: everyone_told(simulator, epoch2), 60.0, "every TM told the new epoch", interval=0.01
    )
    told = time.perf_counter() - killed
    rss_second = second.rss_bytes()
    after = simulator.tally.commands - commands_before
    point = {
        "jobs": jobs,
        "taskmanagers": taskmanagers,
        "handoff": handoff,
        "simulator_sessions": len(simulator.sessions),
        "write_s": round(written, 2),
        "hold_s": round(held, 2),
        "cold_recovery_s": cold,
        "cold_summary": summary1,
        "ready_s": round(ready, 3),
        "recovery_s": recovery,
        "recovery_ms_per_job": round(recovery / jobs * 1000, 4),
        "recovery_listing_s": listed_s(second, epoch2),
        # The standby's copy of the pointers and records: waited for, and jobs held (-1: not
        # vouched for, every job read); None from a version without one.
        "warm_wait_s": listed_s(second, epoch2, WARM),
        "warm_held": warm_held(second, epoch2),
        "recovery_lines": recovery_lines(second, epoch2),
        "records_written_before_ready_s": listed_s(second, epoch2, WROTE),
        "records_written_after_ready_s": late_records_s(second, epoch2),
        "takeover_cpu_s": round(cpu, 3),
        "takeover_cpu_ms_per_job": round(cpu / jobs * 1000, 4),
        # The recovery thread's own CPU, kill to "recovery done" (None: a release before it
        # said): the takeover's work without the heartbeats and the other threads beside it.
        "recovery_thread_cpu_ms_per_job": _per_job_ms(summary2.pop("thread_cpu_s", None), jobs),
        "heartbeats_seen": {
            "answered": simulator.tally.answered,
            "refused": simulator.tally.refused,
            "failed": simulator.tally.failed,
        },
        "all_told_s": round(told, 3),
        "summary": summary2,
        "commands_after_kill": dict(after),
        "running_in_simulator": simulator.running(),
        "leader_rss_mib": rss_mib(rss_first),
        "new_leader_rss_mib": rss_mib(rss_second),
        "heartbeat": heartbeats,
    }
    progress(f"{jobs} jobs: {point}")
    _check(point)
    second.signal(signal.SIGTERM)
    return point


def _check(point: Json) -> None:
    summary: dict[str, Any] = point["summary"]
    jobs = point["jobs"]
    if (
        int(summary.get("adopted", -1)) != jobs
        or int(summary.get("restarted", 0))
        or int(summary.get("failed", 0))
        or point["commands_after_kill"]
        or point["running_in_simulator"] != jobs
    ):
        raise RuntimeError(f"failover of {jobs} jobs was not a clean adoption: {point}")


def rows(points: list[Json]) -> list[Json]:
    result = []
    for p in points:
        label = f"{p['jobs']:,} jobs on {p['taskmanagers']:,} TaskManagers"
        if "ready_s" in p:
            result.extend(_failover_rows(p, label))
        beat = p["heartbeat"]
        # What the leader measurably spent on these TaskManagers at the default settings (an
        # idle or paced one beats once per hold, not once per interval), scaled to 1,000.
        share = beat["core_share"] * HEARTBEAT_GOAL_AT / p["taskmanagers"]
        result.append(
            summary_row(
                f"leader CPU for heartbeats of {HEARTBEAT_GOAL_AT:,} TaskManagers at the default"
                f" settings (measured with {p['taskmanagers']:,}, {p['jobs']:,} jobs held)",
                share * 100,
                "% of a core",
                goal=f"< {HEARTBEAT_GOAL * 100:g} %",
                # No heartbeat answered in the window is no figure, not a goal met.
                met=bool(beat["heartbeats"]) and share < HEARTBEAT_GOAL,
                note=f"{beat['cpu_us_per_heartbeat']:.0f} µs per heartbeat measured over "
                f"{beat['heartbeats']} heartbeats ({beat['heartbeats_per_tm_s']:.2f}/s per"
                f" TaskManager answered; {beat['core_share_at_interval'] * 100:.1f} % at one"
                " heartbeat a second each)",
            )
        )
    return result


def _failover_rows(p: Json, label: str) -> list[Json]:
    term = p.get("handoff") == "term"
    goal = HANDOFF_GOAL_S["term" if term else "kill"]
    return [
        summary_row(
            f"{'graceful handoff (SIGTERM)' if term else 'crash failover (SIGKILL)'} to a ready"
            f" leader, {label}",
            p["ready_s"],
            "s",
            goal=f"< {goal:g} s, all adopted, none restarted",
            met=p["ready_s"] < goal and not p["commands_after_kill"],
            note=f"recovery {p['recovery_s']:.3f} s ({p['recovery_ms_per_job']:.3f} ms per "
            f"job); every TaskManager told {p['all_told_s']:.2f} s after the kill; adopted "
            f"{p['summary'].get('adopted')}",
        ),
        summary_row(
            f"leader RSS, {label}",
            p["new_leader_rss_mib"],
            "MiB",
            goal="",
            met=None,
            note=f"first leader {p['leader_rss_mib']} MiB",
        ),
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument(
        "--jobs", default=None, help="job counts, comma-separated (1000,5000,10000; quick: 50)"
    )
    cli.add_argument(
        "--tms-per-session",
        type=int,
        default=None,
        help="simulated TaskManagers sharing one ZooKeeper session (default: as few as keep"
        f" the sessions within {SIM_SESSIONS}, under ZooKeeper's 60 connections per address)",
    )
    cli.add_argument(
        "--handoff",
        choices=sorted(HANDOFF_SIGNAL),
        default="kill",
        help="how jm-1 goes: SIGKILL (a crash, the default) or SIGTERM (a graceful handoff)",
    )
    cli.add_argument(
        "--heartbeats-only",
        action="store_true",
        help="measure the leader's heartbeat cost at each point, without the failover",
    )
    args = cli.parse_args()
    # A quick run holds idle heartbeats 2 s (where the code has idle holds): its short window
    # then sees every TaskManager poll.
    idle_hold = QUICK_IDLE_HOLD if args.quick and default_idle_hold() is not None else None
    window = max(2.0, idle_hold or 0.0) if args.quick else CPU_WINDOW_S
    counts = [int(n) for n in (args.jobs or ("50" if args.quick else "1000,5000,10000")).split(",")]
    parameters: Json = {
        "jobs": counts,
        "jobs_per_taskmanager": JOBS_PER_TM,
        "tms_per_session": args.tms_per_session,
        "session_timeout": SESSION_TIMEOUT,
        "heartbeat_interval": configured_default("heartbeat.interval"),
        "recovery_parallelism": configured_default("jobmanager.recovery-parallelism"),
        "cpu_window_s": window,
        "quick": args.quick,
        "heartbeats_only": args.heartbeats_only,
        "handoff": args.handoff,
    }

    def body() -> Json:
        with temp_zookeeper("failover-scale") as zookeeper:
            points = [
                measure(
                    zookeeper,
                    n,
                    max(1, n // JOBS_PER_TM),
                    args.tms_per_session,
                    window,
                    failover=not args.heartbeats_only,
                    handoff=args.handoff,
                    idle_hold=idle_hold,
                )
                for n in counts
            ]
            return cluster_document(
                "failover_scale", parameters, {"points": points}, rows(points), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
