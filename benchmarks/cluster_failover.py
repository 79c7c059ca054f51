"""JobManager failover with N running jobs: time until the new leader serves and every job runs.

A cluster of real processes (2 JobManagers, 1 TaskManager with a slot per job) runs N
long-running :data:`_cluster.TICKING` pipelines (no JVM; one ground-truth line per second).
Each trial signals the leading JobManager and measures, from just before the signal:

- ``serves``: the standby answers ``/readyz`` 200 as the leader (granted and recovered);
- ``all_running``: its ``GET /v1/jobs`` shows every job RUNNING.

Then it counts attempts restarted (a job whose attempt number grew: goal 0, every attempt
adopted) and ticks replayed (a later attempt writing a tick an earlier one had reached: goal 0),
and starts a fresh JobManager as the next standby; the next trial begins once exactly two
JobManagers contend again. Three ways to stop the leader, in rotating order:

- ``crash``: SIGKILL; the host stays up, so the leader's port refuses connections (what fast
  crash detection acts on; goal under 2 s);
- ``host``: SIGSTOP, then SIGKILL once measured: the process neither answers nor refuses,
  which is what a standby sees of a dead host or a partition; only the session expiry ends
  its leadership (goal: the session timeout plus 1 s);
- ``graceful``: SIGTERM: the leader releases its leadership on the way out (goal under 1 s).

The job counts run in turn on one cluster (jobs are added, never restarted); each session
timeout gets its own cluster.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from _cluster import (
    TICKING,
    BenchCluster,
    bench_cluster,
    configured_default,
    read_truth,
    replayed_ticks,
    tick_count,
)
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    rotated,
    run_main,
    summary,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.client import Client
from steward.testing.processes import Proc

SIGNALS = {"crash": signal.SIGKILL, "host": signal.SIGSTOP, "graceful": signal.SIGTERM}
JOB_SECONDS = 24 * 3600.0


class Run:
    """One cluster at one session timeout, and the jobs it runs."""

    def __init__(self, cluster: BenchCluster, truth_dir: Path, pipeline: Path) -> None:
        self.cluster = cluster
        self.truth_dir = truth_dir
        self.pipeline = pipeline
        self.job_ids: list[str] = []
        self.next_jm = 1

    @property
    def deadline(self) -> float:
        """Generous: the machine is shared."""
        return 5 * self.cluster.session_timeout + 30

    def truth(self, job_id: str) -> Path:
        return self.truth_dir / f"{job_id}.log"

    def start_jobmanager(self) -> Proc:
        proc = self.cluster.start_jobmanager(f"jm-{self.next_jm}")
        self.next_jm += 1
        return proc

    def add_jobs(self, total: int) -> None:
        """Submit jobs until ``total`` run; wait until each has ticked once."""
        cluster = self.cluster
        leader = cluster.wait_leader(self.deadline)
        with Client([leader.address], timeout=60) as client:
            while len(self.job_ids) < total:
                job_id = f"tick-{len(self.job_ids):04d}"
                truth = self.truth(job_id)
                client.submit(self.pipeline, args=[str(truth), str(JOB_SECONDS)], job_id=job_id)
                self.job_ids.append(job_id)
        progress(f"{total} jobs submitted; waiting until each has ticked")
        wait_until(
            lambda: cluster.check_alive() or all(tick_count(self.truth(j)) for j in self.job_ids),
            60 + total * 2.0,
            "every job ticking",
            interval=0.2,
        )

    def attempts(self, proc: Proc) -> dict[str, int]:
        jobs = self.cluster.jobs(proc) or []
        return {job["job_id"]: job["attempt_count"] for job in jobs}

    def all_running(self, proc: Proc) -> bool:
        jobs = self.cluster.jobs(proc)
        if jobs is None:
            return False
        states = {job["job_id"]: job["state"] for job in jobs if job["served_by"] == proc.id}
        return all(states.get(job_id) == "RUNNING" for job_id in self.job_ids)

    def trial(self, mode: str) -> Json:
        cluster = self.cluster
        leader = cluster.wait_leader(self.deadline)
        standby = next(p for p in cluster.jobmanagers() if p is not leader)
        before = self.attempts(leader)
        replayed_before = sum(replayed_ticks(self.truth(j)) for j in self.job_ids)
        started = time.perf_counter()
        leader.signal(SIGNALS[mode])
        wait_until(lambda: cluster.serving_leader(standby), self.deadline, "standby serves", 0.02)
        serves = time.perf_counter() - started
        wait_until(lambda: self.all_running(standby), self.deadline, "all jobs running", 0.02)
        all_running = time.perf_counter() - started
        if mode == "host":
            leader.signal(signal.SIGKILL)
        after = self.attempts(standby)
        restarted = sorted(j for j in self.job_ids if after.get(j, 0) > before.get(j, 0))
        ticks = {j: tick_count(self.truth(j)) for j in self.job_ids}
        # Every job is alive after the failover: each writes another tick.
        wait_until(
            lambda: all(tick_count(self.truth(j)) > ticks[j] for j in self.job_ids),
            self.deadline,
            "every job ticking after the failover",
            interval=0.2,
        )
        replayed = sum(replayed_ticks(self.truth(j)) for j in self.job_ids) - replayed_before
        self.start_jobmanager()
        cluster.wait_jobmanagers(2, self.deadline)
        progress(
            f"{mode:8} jobs={len(self.job_ids):3}: serves {serves:.3f}s, all running "
            f"{all_running:.3f}s, restarted {len(restarted)}, replayed ticks {replayed}"
        )
        return {
            "mode": mode,
            "jobs": len(self.job_ids),
            "serves_s": round(serves, 4),
            "all_running_s": round(all_running, 4),
            "restarted": len(restarted),
            "replayed_ticks": replayed,
            "old_leader": leader.id,
            "new_leader": standby.id,
        }

    def starts_per_job(self) -> dict[str, int]:
        return {
            j: sum(1 for kind, _, _ in read_truth(self.truth(j)) if kind == "start")
            for j in self.job_ids
        }


def run_session(zookeeper: TempZooKeeper, timeout: float, counts: list[int], args: Json) -> Json:
    """Every trial at one session timeout, on one cluster."""
    pipeline = zookeeper.workdir / "ticking.py"
    pipeline.write_text(TICKING)
    cluster_id = f"failover-{timeout:g}s"
    with bench_cluster(zookeeper.workdir, zookeeper.connect_string, cluster_id, timeout) as cluster:
        truth_dir = cluster.workdir / "truth"
        truth_dir.mkdir()
        run = Run(cluster, truth_dir, pipeline)
        run.start_jobmanager()
        run.cluster.wait_leader(run.deadline)
        run.start_jobmanager()
        cluster.start_taskmanager("tm-1", slots=max(counts))
        cluster.wait_taskmanagers(1, run.deadline)
        cluster.wait_jobmanagers(2, run.deadline)
        trials: list[Json] = []
        for count in counts:
            run.add_jobs(count)
            for repeat in range(args["repeats"]):
                for mode in rotated(args["modes"], repeat + len(trials)):
                    trials.append(run.trial(mode))
        starts = run.starts_per_job()
    return {
        "session_timeout_s": timeout,
        "trials": trials,
        "attempt_starts_per_job_max": max(starts.values()),
        "by_mode_and_jobs": _grouped(trials),
    }


def _grouped(trials: list[Json]) -> dict[str, Any]:
    groups: dict[str, Any] = {}
    for trial in trials:
        groups.setdefault(f"{trial['mode']}_{trial['jobs']}", []).append(trial)
    return {
        key: {
            "serves_s": summary([t["serves_s"] for t in group], 3),
            "all_running_s": summary([t["all_running_s"] for t in group], 3),
            "restarted": sum(t["restarted"] for t in group),
            "replayed_ticks": sum(t["replayed_ticks"] for t in group),
        }
        for key, group in groups.items()
    }


GOALS = {
    "crash": ("< 2 s (process dies, host up)", lambda s, timeout: s < 2.0),
    "host": ("<= session timeout + 1 s", lambda s, timeout: s <= timeout + 1.0),
    "graceful": ("< 1 s", lambda s, timeout: s < 1.0),
}
LABELS = {"crash": "SIGKILL", "host": "SIGSTOP (host lost)", "graceful": "SIGTERM"}


def summary_rows(sessions: list[Json]) -> list[Json]:
    rows = []
    for session in sessions:
        timeout = session["session_timeout_s"]
        for key, group in session["by_mode_and_jobs"].items():
            mode, jobs = key.rsplit("_", 1)
            goal, check = GOALS[mode]
            median = group["all_running_s"]["median"]
            rows.append(
                summary_row(
                    f"failover, {LABELS[mode]}, {jobs} job(s), session {timeout:g} s: "
                    "until every job RUNNING",
                    median,
                    "s",
                    goal=goal,
                    met=check(median, timeout),
                    note=f"median of {group['all_running_s']['n']} (max "
                    f"{group['all_running_s']['max']:.2f} s); serving after "
                    f"{group['serves_s']['median']:.3f} s",
                )
            )
    trials = [t for s in sessions for t in s["trials"]]
    restarted = sum(t["restarted"] for t in trials)
    replayed = sum(t["replayed_ticks"] for t in trials)
    rows.append(
        summary_row(
            "attempts restarted by a failover",
            restarted,
            "attempts",
            goal="0 (all adopted)",
            met=restarted == 0,
            note=f"over {len(trials)} failovers, {sum(t['jobs'] for t in trials)} job-failovers",
        )
    )
    rows.append(
        summary_row(
            "pipeline output replayed",
            replayed,
            "ticks",
            goal="0",
            met=replayed == 0,
            note="ground-truth ticks written again by a later attempt",
        )
    )
    return rows


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--session-timeouts", default=None, help="seconds, comma-separated (4,10)")
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated (1,10,100)")
    cli.add_argument("--longer-jobs", default=None, help="job counts past the first timeout (10)")
    cli.add_argument("--repeats", type=int, default=None, help="trials per mode and count (3)")
    cli.add_argument("--modes", default=None, help="crash,host,graceful (quick: crash,graceful)")
    args = cli.parse_args()
    quick = args.quick
    parameters: Json = {
        "session_timeouts_s": _floats(args.session_timeouts or ("4" if quick else "4,10")),
        "jobs": _ints(args.jobs or ("2" if quick else "1,10,100")),
        "jobs_at_longer_timeouts": _ints(args.longer_jobs or "10"),
        "repeats": args.repeats or (1 if quick else 3),
        "modes": (args.modes or ("crash,graceful" if quick else "crash,host,graceful")).split(","),
        "jobmanagers": 2,
        "taskmanagers": 1,
        "crash_detection_default": configured_default("high-availability.crash-detection"),
        "heartbeat_interval_default": configured_default("heartbeat.interval"),
        "quick": quick,
    }

    def body() -> Json:
        sessions = []
        with temp_zookeeper("cluster-failover") as zookeeper:
            for index, timeout in enumerate(parameters["session_timeouts_s"]):
                counts = parameters["jobs"] if index == 0 else parameters["jobs_at_longer_timeouts"]
                repeats = parameters["repeats"] if index == 0 else max(1, parameters["repeats"] - 1)
                progress(f"session timeout {timeout:g}s, jobs {counts}")
                sessions.append(
                    run_session(zookeeper, timeout, counts, {**parameters, "repeats": repeats})
                )
            results = {"sessions": sessions}
            return cluster_document(
                "cluster_failover", parameters, results, summary_rows(sessions), zookeeper
            )

    return run_main(body, args.verbose)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def _floats(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part]


if __name__ == "__main__":
    sys.exit(main())
