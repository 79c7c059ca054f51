"""Reads during failover: does a standby keep answering while there is no leader?

A cluster of real processes (2 JobManagers, 1 TaskManager) runs a few long-running
:data:`_cluster.TICKING` pipelines. Two reader threads hammer the standby, one with
``GET /v1/jobs`` and one with ``GET /v1/cluster``, each ``--rate`` requests per second on its
own keep-alive connection, from one second before the leader is stopped until one second
after the standby serves as the new leader. The leader is stopped twice:

- ``crash``: SIGKILL (the leaderless window is short when fast crash detection is on);
- ``host``: SIGSTOP (the leader neither answers nor refuses: the window lasts until its
  session expires, about a session timeout).

Every request is counted as answered (HTTP 200 with a body that parses) or failed (any other
status, a timeout or a connection error), with its latency; requests sent inside the
leaderless window (from the signal until the standby serves) are counted separately.
Goal: every request answered.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from dataclasses import dataclass

import httpx

from _cluster import TICKING, BenchCluster, bench_cluster
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    percentile,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.client import Client
from steward.testing.credentials import auth_headers
from steward.testing.processes import Proc

SIGNALS = {"crash": signal.SIGKILL, "host": signal.SIGSTOP}
PATHS = ("/v1/jobs", "/v1/cluster")


@dataclass
class Sample:
    path: str
    sent: float
    seconds: float
    ok: bool
    error: str = ""


class Hammer:
    """Reader threads that send GETs to one JobManager at a fixed rate until stopped."""

    def __init__(self, proc: Proc, rate: float) -> None:
        self.proc = proc
        self.interval = 1.0 / rate
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._loop, args=(p,)) for p in PATHS]

    def __enter__(self) -> Hammer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _loop(self, path: str) -> None:
        with httpx.Client(timeout=5.0, headers=auth_headers()) as http:
            next_at = time.perf_counter()
            while not self._stop.is_set():
                sample = self._one(http, path)
                with self._lock:
                    self.samples.append(sample)
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.perf_counter()))

    def _one(self, http: httpx.Client, path: str) -> Sample:
        sent = time.perf_counter()
        try:
            answer = http.get(self.proc.address + path)
            ok = answer.status_code == 200 and isinstance(answer.json(), dict)
            error = "" if ok else f"HTTP {answer.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            ok, error = False, type(exc).__name__
        return Sample(path, sent, time.perf_counter() - sent, ok, error)


def trial(cluster: BenchCluster, mode: str, rate: float, next_id: int) -> Json:
    deadline = 5 * cluster.session_timeout + 30
    leader = cluster.wait_leader(deadline)
    standby = next(p for p in cluster.jobmanagers() if p is not leader)
    with Hammer(standby, rate) as hammer:
        time.sleep(1.0)  # a baseline of reads before the signal (not synchronisation)
        signalled = time.perf_counter()
        leader.signal(SIGNALS[mode])
        wait_until(lambda: cluster.serving_leader(standby), deadline, "standby serves", 0.02)
        served = time.perf_counter()
        time.sleep(1.0)  # reads after the takeover (not synchronisation)
    if mode == "host":
        leader.signal(signal.SIGKILL)
    cluster.start_jobmanager(f"jm-{next_id}")
    cluster.wait_jobmanagers(2, deadline)
    return _figures(mode, hammer.samples, signalled, served)


def _figures(mode: str, samples: list[Sample], signalled: float, served: float) -> Json:
    window = [s for s in samples if signalled <= s.sent < served]
    latencies = [s.seconds for s in samples if s.ok]
    failures: dict[str, int] = {}
    for s in samples:
        if not s.ok:
            failures[s.error] = failures.get(s.error, 0) + 1
    result = {
        "mode": mode,
        "leaderless_s": round(served - signalled, 3),
        "requests": len(samples),
        "answered": sum(s.ok for s in samples),
        "failed": len(samples) - sum(s.ok for s in samples),
        "failures": failures,
        "leaderless_requests": len(window),
        "leaderless_answered": sum(s.ok for s in window),
        "latency_ms": {
            "p50": round(percentile(latencies, 0.5) * 1000, 2) if latencies else None,
            "p99": round(percentile(latencies, 0.99) * 1000, 2) if latencies else None,
        },
        "by_path": {
            path: {
                "requests": sum(s.path == path for s in samples),
                "answered": sum(s.ok and s.path == path for s in samples),
            }
            for path in PATHS
        },
    }
    progress(
        f"{mode}: {result['answered']}/{result['requests']} answered, leaderless "
        f"{result['leaderless_s']}s with {result['leaderless_answered']}/"
        f"{result['leaderless_requests']} answered, p50 {result['latency_ms']['p50']} ms"
    )
    return result


def run(zookeeper: TempZooKeeper, parameters: Json) -> Json:
    pipeline = zookeeper.workdir / "ticking.py"
    pipeline.write_text(TICKING)
    timeout = parameters["session_timeout_s"]
    quorum = zookeeper.connect_string
    with bench_cluster(zookeeper.workdir, quorum, "reads", timeout) as cluster:
        cluster.start_jobmanager("jm-1")
        leader = cluster.wait_leader(60)
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=parameters["jobs"])
        cluster.wait_taskmanagers(1, 60)
        cluster.wait_jobmanagers(2, 60)
        truth = cluster.workdir / "truth"
        truth.mkdir()
        with Client([leader.address], timeout=60) as client:
            for n in range(parameters["jobs"]):
                job_id = f"read-{n:03d}"
                client.submit(pipeline, args=[str(truth / f"{job_id}.log"), "86400"], job_id=job_id)
        trials = [
            trial(cluster, mode, parameters["rate_per_path"], 3 + i)
            for i, mode in enumerate(parameters["modes"])
        ]
        cluster.check_alive()
    return {"trials": trials}


def rows(results: Json) -> list[Json]:
    table = []
    for t in results["trials"]:
        label = "SIGKILL" if t["mode"] == "crash" else "SIGSTOP (host lost)"
        table.append(
            summary_row(
                f"reads answered by the standby, leader {label}",
                100.0 * t["answered"] / t["requests"],
                "%",
                goal="100 % (every request answered)",
                met=t["failed"] == 0,
                note=f"{t['answered']}/{t['requests']} (GET /v1/jobs and /v1/cluster); "
                f"{t['leaderless_answered']}/{t['leaderless_requests']} in the "
                f"{t['leaderless_s']:.2f} s without a leader",
                digits=2,
            )
        )
        table.append(
            summary_row(
                f"read latency p50 during failover, leader {label}",
                t["latency_ms"]["p50"],
                "ms",
                goal="",
                met=None,
                note=f"p99 {t['latency_ms']['p99']} ms",
                digits=1,
            )
        )
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--rate", type=float, default=10.0, help="requests/s per path (10)")
    cli.add_argument("--jobs", type=int, default=None, help="running jobs (10)")
    cli.add_argument("--session-timeout", type=float, default=4.0, help="seconds (4)")
    cli.add_argument("--modes", default=None, help="crash,host")
    args = cli.parse_args()
    parameters: Json = {
        "rate_per_path": args.rate,
        "jobs": args.jobs or (2 if args.quick else 10),
        "session_timeout_s": args.session_timeout,
        "modes": (args.modes or ("crash" if args.quick else "crash,host")).split(","),
        "paths": list(PATHS),
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("failover-reads") as zookeeper:
            results = run(zookeeper, parameters)
            return cluster_document("failover_reads", parameters, results, rows(results), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
