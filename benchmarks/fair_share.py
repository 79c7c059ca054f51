"""Fair share under a burst: one team's 500 jobs, another's 20 a minute later (issue 27 part 3).

A real JobManager (its scheduler and queues under test) with queues ``team-a`` and ``team-b``,
each guaranteed half of the slots; the TaskManagers are simulated (``_tm_simulator.py`` with
``run_for``: real registrations, real fenced execution leases, real HTTP heartbeats; each
attempt holds its slot ``run_for`` seconds, the "slot turnover", then ends FINISHED).

1. team A submits its burst (``POST /v1/jobs/batch``), which takes every slot;
2. ``--delay`` seconds later team B submits its jobs;
3. once every B job has started, the run stops (A's backlog is not drained).

Figures, from the times the simulated TaskManagers took each lease:

- ``b_first_wave_wait_turnovers``: the longest wait (submission to lease) of B's first wave
  (as many B jobs as its guarantee holds slots), in slot turnovers. Goal: at most 1: B's
  jobs take the next slots A's attempts free, not the end of A's backlog. A slot turnover is
  the period at which a busy slot is freed and taken again: ``run_for`` plus the hand-over
  (the end reported in a heartbeat, the scheduling pass, the start command in a heartbeat
  reply), measured as ``run_for / slot_use``; ``b_first_wave_wait_run_for`` is the same wait
  in units of ``run_for`` alone;
- ``shares``: over the contention window (from one turnover after B's submission, when B
  should hold its guarantee, to B's last start: both queues have jobs waiting throughout),
  each queue's time-averaged share of the slots the two queues used, against its guarantee
  (goal: within 5 points), and the slots' use (what heartbeat round trips between an
  attempt's end and the next start cost);
- ``pass_cost``: in this process, the CPU time of the choosing part of one scheduling pass
  over 10,000 waiting jobs in 4 queues (each job into its queue's heap, one heapify each, 10
  free slots handed out, every job left waiting given its reason), against the same part of
  the pass before queues (a sort of every job, then the walk), replayed on the same jobs in
  the same run: median of 9.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _cluster import ZK_ROOT, BenchCluster, bench_cluster
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
from _tm_simulator import TaskManagerSimulator, simulated_taskmanagers
from steward.config.keys_scheduling import to_queues
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.queues import QueuePass
from steward.security.credentials import INTERNAL_KEY, read_secret
from steward.wire.jobs import JobGraphPointer, JobSpec

QUEUES = "team-a:guarantee=0.5,maximum=1;team-b:guarantee=0.5,maximum=1"
SHARE_GOAL = 0.05
WAIT_GOAL = 1.0
PIPELINE = "def main(ctx):\n    return None\n"


def measure(zookeeper_connect: str, workdir: Path, shape: Json) -> Json:
    with bench_cluster(
        workdir, zookeeper_connect, "fair-share", 10.0, **{"scheduling.queues": QUEUES}
    ) as cluster:
        root = f"{ZK_ROOT}/{cluster.settings['high-availability.cluster-id']}"
        credential = read_secret(Path(cluster.settings[INTERNAL_KEY]), INTERNAL_KEY)
        with simulated_taskmanagers(
            zookeeper_connect,
            root,
            cluster.zookeeper_access,
            count=shape["taskmanagers"],
            slots=shape["slots_per_tm"],
            internal_credential=credential,
            interval=0.2,
            run_for=shape["turnover_s"],
        ) as simulator:
            return _run(cluster, simulator, shape)


def _run(cluster: BenchCluster, simulator: TaskManagerSimulator, shape: Json) -> Json:
    leader = cluster.start_jobmanager("jm-1")
    simulator.register()
    simulator.start([leader.address])
    cluster.wait_taskmanagers(shape["taskmanagers"], 120.0)
    pipeline = cluster.workdir / "noop.py"
    pipeline.write_text(PIPELINE)
    with cluster.client() as client:
        a_at = time.monotonic()
        client.submit_many(pipeline, _jobs("a", shape["a_jobs"]))
        a_submitted = time.monotonic() - a_at
        progress(f"team A's {shape['a_jobs']} jobs submitted in {a_submitted:.1f}s")
        time.sleep(max(0.0, a_at + shape["delay_s"] - time.monotonic()))  # the scenario's minute
        b_at = time.monotonic()
        client.submit_many(pipeline, _jobs("b", shape["b_jobs"]))
    started = simulator.tally.started
    wait_until(
        lambda: all(f"b-{i:04d}" in started for i in range(shape["b_jobs"])),
        shape["turnover_s"] * (shape["b_jobs"] + 10) + 60,
        "every B job started",
        interval=0.05,
    )
    return _figures(simulator, shape, b_at, a_submitted)


def _jobs(team: str, count: int) -> list[Json]:
    return [
        {"job_id": f"{team}-{i:04d}", "name": team, "queue": f"team-{team}"} for i in range(count)
    ]


def _figures(simulator: TaskManagerSimulator, shape: Json, b_at: float, a_submitted: float) -> Json:
    turnover, slots = shape["turnover_s"], shape["taskmanagers"] * shape["slots_per_tm"]
    starts = simulator.tally.started
    b_waits = sorted((at - b_at) / turnover for job, at in starts.items() if job.startswith("b-"))
    first_wave = b_waits[: min(len(b_waits), slots // 2)]
    window = (b_at + turnover, max(at for job, at in starts.items() if job.startswith("b-")))
    held = _slot_seconds(simulator, window)
    used = held["a"] + held["b"]
    length = max(window[1] - window[0], 1e-9)
    use = used / (slots * length)
    return {
        **shape,
        "slots": slots,
        "a_submit_s": round(a_submitted, 2),
        "turnover_measured_s": round(turnover / use, 3),
        "b_first_wave_wait_turnovers": round(max(first_wave) * use, 3),
        "b_first_wave_wait_run_for": round(max(first_wave), 3),
        "b_wait_turnovers": [round(w * use, 3) for w in b_waits],
        "window_s": round(length, 2),
        "shares": {team: round(held[team] / used, 4) if used else 0.0 for team in ("a", "b")},
        "slot_use": round(use, 4),
        "a_started": sum(1 for job in starts if job.startswith("a-")),
    }


def _slot_seconds(simulator: TaskManagerSimulator, window: tuple[float, float]) -> dict[str, float]:
    """Slot-seconds each team's attempts held within ``window`` (start to end, or on)."""
    tally, (low, high) = simulator.tally, window
    held = {"a": 0.0, "b": 0.0}
    for job, start in tally.started.items():
        end = tally.ended.get(job, high)
        held[job[0]] += max(0.0, min(end, high) - max(start, low))
    return held


def pass_cost(waiting: int = 10_000, repeats: int = 9) -> Json:
    """CPU time of the choosing part of a scheduling pass over ``waiting`` jobs that all want
    a slot while 10 are free: the scheduler's walk as written now (each job into its queue's
    heap, one heapify per queue, the neediest queue's first job per free slot, every job left
    given its reason) against the walk before queues (a sort of every job, then each given a
    slot or its reason), both replayed here on the same jobs, in this thread's CPU seconds
    (this machine's other load left out), median of ``repeats``."""
    queues = to_queues("a:guarantee=0.4;b:guarantee=0.3;c:guarantee=0.2,maximum=0.3")
    pointer = JobGraphPointer(blob="b", sha256="0" * 64, epoch=1)
    names = [queue.name for queue in queues]
    jobs = [
        JobMaster(JobSpec(job_id=f"j{i}", queue=names[i % 4], priority=i % 3), pointer, i / 10)
        for i in range(waiting)
    ]
    for master in jobs:
        master.schedule("waiting for a free slot")

    def awaited(master: JobMaster) -> bool:  # Membership.expire_awaited_report's first test
        return master.current is not None and master.current.await_report_until is not None

    def queued() -> None:
        plan = QueuePass(queues, (), 10)
        for master in jobs:
            expired = awaited(master)
            if master.current is not None:
                plan.holding(master)
            elif not expired and master.wants_slot(0.0):
                plan.wants(master)
        plan.ready()
        for _ in range(10):
            queue = plan.neediest()
            if queue is not None:
                plan.started(plan.pop(queue))
        left: list[JobMaster] = []
        for master, reason in plan.reasons(lambda _slots: "no slot"):
            if master.waiting(reason):
                left.append(master)

    def before() -> None:
        refused, placed, left = {1: "no slot"}, 0, []
        for master in sorted(jobs, key=lambda m: m.submitted_at):
            if awaited(master):
                continue
            if master.wants_slot(0.0):
                placed += 1
                slots = master.spec.slots
                no_room = placed > 10 and any(r <= slots for r in refused)
                if no_room and master.waiting(refused.get(slots, "no slot")):
                    left.append(master)

    new = statistics.median(_cpu(queued) for _ in range(repeats))
    old = statistics.median(_cpu(before) for _ in range(repeats))
    return {
        "waiting": waiting,
        "queues_cpu_ms": round(new * 1000, 2),
        "before_cpu_ms": round(old * 1000, 2),
        "ratio": round(new / old, 3),
    }


def _cpu(action: Callable[[], object]) -> float:
    started = time.thread_time()
    action()
    return time.thread_time() - started


def rows(point: Json) -> list[Json]:
    shares, cost = point["shares"], point["pass_cost"]
    off = max(abs(shares["a"] - 0.5), abs(shares["b"] - 0.5))
    label = f"{point['a_jobs']} + {point['b_jobs']} jobs, {point['slots']} slots"
    return [
        summary_row(
            f"second team's first wave waits, {label}",
            point["b_first_wave_wait_turnovers"],
            "slot turnovers",
            goal=f"<= {WAIT_GOAL:g}",
            met=point["b_first_wave_wait_turnovers"] <= WAIT_GOAL,
            note=f"a turnover measured {point['turnover_measured_s']:g} s (attempts run"
            f" {point['turnover_s']:g} s: {point['b_first_wave_wait_run_for']:.2f} of those);"
            f" B's last job waited {point['b_wait_turnovers'][-1]:.2f}",
        ),
        summary_row(
            f"share of used slots off the guarantee (50/50), {label}",
            round(off * 100, 2),
            "points",
            goal=f"<= {SHARE_GOAL * 100:g}",
            met=off <= SHARE_GOAL,
            note=f"A {shares['a']:.1%}, B {shares['b']:.1%} over {point['window_s']:g} s;"
            f" slots in use {point['slot_use']:.1%}",
        ),
        summary_row(
            f"queue part of a scheduling pass, {cost['waiting']:,} waiting jobs",
            cost["queues_cpu_ms"],
            "ms CPU",
            goal="",
            met=None,
            note=f"{cost['ratio']:g} x the same part of a pass before queues (a sort of every"
            f" job: {cost['before_cpu_ms']:g} ms); one walk, one heapify per queue",
        ),
    ]


def main() -> int:
    cli = parser(__doc__)
    args = cli.parse_args()
    shape: Json = (
        {"a_jobs": 40, "b_jobs": 6, "delay_s": 3.0, "turnover_s": 1.5, "taskmanagers": 2}
        | {"slots_per_tm": 2}
        if args.quick
        else {"a_jobs": 500, "b_jobs": 20, "delay_s": 60.0, "turnover_s": 5.0, "taskmanagers": 2}
        | {"slots_per_tm": 5}
    )

    def body() -> Json:
        with temp_zookeeper("fair-share") as zookeeper:
            point = measure(zookeeper.connect_string, zookeeper.workdir, shape)
            point["pass_cost"] = pass_cost(1_000 if args.quick else 10_000)
            progress(f"fair share: {point}")
            return cluster_document(
                "fair_share", {"quick": args.quick, "queues": QUEUES}, point, rows(point), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
