"""The leader's CPU per TaskManager heartbeat, and its share of a core at 1,000 TaskManagers.

For each point (TaskManagers, 10 running jobs each) in a fresh namespace, at the default
settings: this process writes the job graphs and status records as a leader would, simulated
TaskManagers (``_raw_heartbeats.py``: real registrations, real fenced leases, the wire
protocol's heartbeats over bare HTTP/1.1, long-polling at the default interval) hold one
lease per job; JobManager ``jm-1`` starts, recovers and adopts them all, and once every
TaskManager was told its epoch the leader's CPU seconds (user + system, from ``/proc``) are
read over a window of heartbeats, less its CPU over as long a window with the heartbeats
paused (``_heartbeat_cost.py``). ``core_share_at_interval`` projects the measured CPU per
heartbeat to every TaskManager beating once per interval; ``core_share_at_1000`` is the CPU per
heartbeat times 1,000 per second (a heartbeat per TaskManager per interval: what idle
TaskManagers sent before idle holds). Where the code under test has idle holds
(``heartbeat.idle-hold``), an idle TaskManager sends one heartbeat per hold, and the figure that
counts is ``core_share_at_1000_measured``: the leader's measured share of a core for these
TaskManagers' heartbeats, scaled to 1,000 of them (the simulator's rate, shown as
``heartbeats_per_tm_s``, is its own: check it against the hold). The window is three holds
(at least 10 s), so every TaskManager's polls fall in it alike. ``--busy-attempts N`` makes the
TaskManagers busy: N of each one's attempts report new progress all the time, which goes with
every heartbeat, or once per ``heartbeat.progress-interval`` where the code under test paces
it. The points at different job counts show whether a heartbeat's cost grows with the jobs the
leader holds (it must not).

Old against new code in the same run: run this script with ``PYTHONPATH`` naming the other
source tree (the JobManager under test is spawned with this environment).

Goal (issue 22): heartbeats of 1,000 TaskManagers under 25 % of one core.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

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
from _raw_heartbeats import RawHeartbeatSimulator
from _tm_simulator import QUICK_IDLE_HOLD, default_idle_hold
from failover_scale import SESSION_TIMEOUT, SIM_SESSIONS, _epoch, everyone_told, recovery_line
from recovery_scaling import persist_jobs
from steward.security.credentials import INTERNAL_KEY, read_secret

JOBS_PER_TM = 10
GOAL = 0.25
"""Of one core, for 1,000 TaskManagers at the default interval."""
AT = 1000
CPU_WINDOW_S = 10.0


def measure(
    zookeeper: TempZooKeeper,
    taskmanagers: int,
    window: float,
    *,
    hold: float = 0.0,
    unheld: int = 0,
    changing: int = 0,
    idle_hold: float | None = None,
) -> Json:
    """``idle_hold``: the cluster's ``heartbeat.idle-hold`` (None: the code's default, or none
    where it has no idle holds). ``unheld``: jobs written beside the held ones, which no
    TaskManager runs (the leader keeps them SCHEDULED: every slot is taken), to see whether a
    heartbeat costs more when the leader holds more jobs than its TaskManagers run.
    ``changing``: every heartbeat carries new progress of that many attempts of its
    TaskManager (busy: never unchanged)."""
    jobs = taskmanagers * JOBS_PER_TM
    extra = {} if idle_hold is None else {"heartbeat.idle-hold": f"{idle_hold:g}s"}
    with bench_cluster(
        zookeeper.workdir,
        zookeeper.connect_string,
        f"heartbeat-cost-{jobs}",
        SESSION_TIMEOUT,
        **extra,
    ) as cluster:
        root = f"{ZK_ROOT}/{cluster.settings['high-availability.cluster-id']}"
        written = persist_jobs(
            zookeeper.connect_string,
            root,
            cluster.settings["high-availability.storage-dir"],
            jobs + unheld,
            cluster.zookeeper_access,
        )
        simulator = RawHeartbeatSimulator(
            zookeeper.connect_string,
            root,
            cluster.zookeeper_access,
            count=taskmanagers,
            slots=JOBS_PER_TM,
            internal_credential=read_secret(Path(cluster.settings[INTERNAL_KEY]), INTERNAL_KEY),
            tms_per_session=-(-taskmanagers // SIM_SESSIONS),
            session_timeout=SESSION_TIMEOUT,
        )
        if idle_hold is not None:
            simulator.idle_hold = idle_hold
        try:
            simulator.register()
            for tm in simulator.taskmanagers:
                tm.changing = changing
            simulator.hold([f"job-{i:05d}" for i in range(jobs)], epoch=_epoch(cluster, root))
            progress(
                f"{jobs + unheld} jobs written in {written:.1f}s, {taskmanagers} TMs hold {jobs}"
            )
            point = _heartbeats(cluster, simulator, jobs + unheld, window, hold)
            return {**point, "held": jobs, "unheld": unheld, "changing": changing}
        finally:
            simulator.stop()


def _heartbeats(
    cluster: BenchCluster, simulator: RawHeartbeatSimulator, jobs: int, window: float, hold: float
) -> Json:
    leader = cluster.start_jobmanager("jm-1")
    simulator.start([leader.address])
    wait_until(
        lambda: cluster.check_alive() or cluster.serving_leader(leader), 300 + jobs * 0.1, "leads"
    )
    epoch, recovery_s, _summary = recovery_line(leader)
    wait_until(lambda: everyone_told(simulator, epoch), 120.0, "every TM told", interval=0.05)
    started = time.monotonic()
    beat = heartbeat_cost(leader, simulator, window)
    point = {
        "jobs": jobs,
        "taskmanagers": len(simulator.taskmanagers),
        "recovery_s": recovery_s,
        "leader_rss_mib": rss_mib(leader.rss_bytes()),
        "running_in_simulator": simulator.running(),
        "commands": dict(simulator.tally.commands),
        "failed_requests": simulator.tally.failed,
        "unchanged_heartbeats": simulator.tally.unchanged,
        "answered_heartbeats": simulator.tally.answered,
        "heartbeat": beat,
        f"core_share_at_{AT}": round(beat["cpu_us_per_heartbeat"] * 1e-6 * AT, 4),
        f"core_share_at_{AT}_measured": round(
            beat["core_share"] * AT / len(simulator.taskmanagers), 4
        ),
        "measured_s": round(time.monotonic() - started, 1),
    }
    progress(f"{jobs} jobs: {point}")
    if hold:
        progress(f"heartbeats go on for {hold:g}s: leader pid={leader.pid}")
        time.sleep(hold)  # for an outside profiler (py-spy record --gil -p <pid>)
    return point


def rows(points: list[Json]) -> list[Json]:
    return [
        summary_row(
            f"leader CPU for heartbeats of {AT:,} TaskManagers at the default interval"
            f" (measured with {p['taskmanagers']:,}, {p['jobs']:,} jobs held)",
            p[f"core_share_at_{AT}_measured"] * 100,
            "% of a core",
            goal=f"< {GOAL * 100:g} %",
            met=p[f"core_share_at_{AT}_measured"] < GOAL,
            note=f"{p['heartbeat']['cpu_us_per_heartbeat']:.0f} µs per heartbeat over "
            f"{p['heartbeat']['heartbeats']} heartbeats "
            f"({p['heartbeat']['heartbeats_per_tm_s']:.2f}/s per TaskManager answered; "
            f"{p[f'core_share_at_{AT}'] * 100:.1f} % at one heartbeat a second each)",
        )
        for p in points
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument(
        "--taskmanagers",
        default=None,
        help=f"TaskManager counts, comma-separated, {JOBS_PER_TM} jobs each (100,300; quick: 10)",
    )
    cli.add_argument(
        "--hold",
        type=float,
        default=0.0,
        help="seconds to keep the heartbeats going after each point (to profile the leader)",
    )
    cli.add_argument(
        "--unheld",
        type=int,
        default=0,
        help="jobs written beside the held ones at each point, run by no TaskManager",
    )
    cli.add_argument(
        "--changing",
        action="store_const",
        const=1,
        default=0,
        help="every heartbeat carries new progress of one attempt (its reports always change)",
    )
    cli.add_argument(
        "--busy-attempts",
        type=int,
        default=None,
        help=f"busy TaskManagers: every heartbeat carries new progress of this many of its"
        f" {JOBS_PER_TM} attempts (--changing is 1)",
    )
    args = cli.parse_args()
    changing = args.changing if args.busy_attempts is None else args.busy_attempts
    # A quick run holds idle heartbeats 2 s (where the code has idle holds), so that its short
    # window still sees every TaskManager poll.
    idle_hold = QUICK_IDLE_HOLD if args.quick and default_idle_hold() is not None else None
    hold = idle_hold or default_idle_hold() or 0.0
    window = max(2.0, hold) if args.quick else max(CPU_WINDOW_S, 3 * hold)
    counts = [int(n) for n in (args.taskmanagers or ("10" if args.quick else "100,300")).split(",")]
    parameters: Json = {
        "taskmanagers": counts,
        "jobs_per_taskmanager": JOBS_PER_TM,
        "heartbeat_interval": configured_default("heartbeat.interval"),
        "heartbeat_idle_hold": hold or None,
        "cpu_window_s": window,
        "quick": args.quick,
        "unheld": args.unheld,
        "changing": changing,
    }

    def body() -> Json:
        with temp_zookeeper("heartbeat-cost") as zookeeper:
            points = [
                measure(
                    zookeeper,
                    n,
                    window,
                    hold=args.hold,
                    unheld=args.unheld,
                    changing=changing,
                    idle_hold=idle_hold,
                )
                for n in counts
            ]
            return cluster_document(
                "heartbeat_cost", parameters, {"points": points}, rows(points), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
