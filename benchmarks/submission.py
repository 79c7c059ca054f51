"""Submission throughput and latency: small pipelines from several concurrent clients.

A cluster of real processes (2 JobManagers, 1 TaskManager with 2 slots) and a small
:data:`_cluster.QUICK` pipeline (returns at once, no Spark, no ``initialize``). For each
client count (1, 4, 16 threads) every thread has its own ``steward.Client`` and submits
``--per-thread`` jobs one after another (``Client.submit``: the packaging of the file, the
POST, the leader's blob write and fenced ZooKeeper writes, the answer). Reported: jobs
accepted per second over the wall time of the whole round, and the latency of one submit
(p50, p99). The submitted jobs run meanwhile on the TaskManager, as they would.

Then one client submits through the standby (which forwards to the leader): the cost of
asking the wrong JobManager.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from _cluster import QUICK, BenchCluster, bench_cluster
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
)
from steward.client import Client
from steward.testing.processes import Proc


def submit_round(address: str, pipeline: Path, threads: int, per_thread: int, tag: str) -> Json:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client_thread(index: int) -> None:
        mine = []
        with Client([address], timeout=60) as client:
            for n in range(per_thread):
                before = time.perf_counter()
                try:
                    client.submit(pipeline, job_id=f"{tag}-{index:02d}-{n:04d}")
                except Exception as exc:
                    with lock:
                        errors.append(repr(exc))
                    continue
                mine.append(time.perf_counter() - before)
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=client_thread, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} submissions failed, first: {errors[0]}")
    result = {
        "threads": threads,
        "jobs": len(latencies),
        "seconds": round(wall, 3),
        "jobs_per_s": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(percentile(latencies, 0.50) * 1000, 2),
            "p99": round(percentile(latencies, 0.99) * 1000, 2),
            "max": round(max(latencies) * 1000, 2),
        },
    }
    progress(
        f"{tag}: {result['jobs_per_s']} jobs/s, p50 {result['latency_ms']['p50']} ms, "
        f"p99 {result['latency_ms']['p99']} ms"
    )
    return result


def start(cluster: BenchCluster) -> tuple[Proc, Proc]:
    first = cluster.start_jobmanager("jm-1")
    cluster.wait_leader(60)
    second = cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1", slots=2)
    cluster.wait_taskmanagers(1, 60)
    cluster.wait_jobmanagers(2, 60)
    leader = cluster.wait_leader(60)
    return leader, second if leader is first else first


def run(zookeeper: TempZooKeeper, parameters: Json) -> Json:
    pipeline = zookeeper.workdir / "quick.py"
    pipeline.write_text(QUICK)
    quorum = zookeeper.connect_string
    with bench_cluster(zookeeper.workdir, quorum, "submission", 4.0) as cluster:
        leader, standby = start(cluster)
        per_thread = parameters["per_thread"]
        # One unmeasured submission: the leader's first one loads code paths.
        submit_round(leader.address, pipeline, 1, 1, "warmup")
        rounds = {
            f"threads_{n}": submit_round(leader.address, pipeline, n, per_thread[i], f"t{n}")
            for i, n in enumerate(parameters["threads"])
        }
        forwarded = submit_round(standby.address, pipeline, 1, per_thread[0], "forwarded")
        cluster.check_alive()
    return {"leader": rounds, "forwarded_1_thread": forwarded}


def rows(results: Json) -> list[Json]:
    table = []
    for key, r in results["leader"].items():
        table.append(
            summary_row(
                f"submissions accepted per second, {r['threads']} client thread(s)",
                r["jobs_per_s"],
                "jobs/s",
                goal="",
                met=None,
                note=f"{r['jobs']} jobs; latency p50 {r['latency_ms']['p50']:.1f} ms, "
                f"p99 {r['latency_ms']['p99']:.1f} ms",
                digits=1,
            )
        )
        table.append(
            summary_row(
                f"submit latency p50, {r['threads']} client thread(s)",
                r["latency_ms"]["p50"],
                "ms",
                goal="",
                met=None,
                note=f"p99 {r['latency_ms']['p99']:.1f} ms ({key})",
                digits=1,
            )
        )
    f = results["forwarded_1_thread"]
    table.append(
        summary_row(
            "submit latency p50 through the standby (forwarded), 1 thread",
            f["latency_ms"]["p50"],
            "ms",
            goal="",
            met=None,
            note=f"p99 {f['latency_ms']['p99']:.1f} ms, {f['jobs_per_s']} jobs/s",
            digits=1,
        )
    )
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--threads", default=None, help="client threads, comma-separated (1,4,16)")
    cli.add_argument("--per-thread", default=None, help="jobs per thread, per count (60,20,8)")
    args = cli.parse_args()
    threads = [int(n) for n in (args.threads or ("1,4" if args.quick else "1,4,16")).split(",")]
    default_per = "5,3" if args.quick else "60,20,8"
    per_thread = [int(n) for n in (args.per_thread or default_per).split(",")]
    if len(per_thread) < len(threads):
        per_thread += [per_thread[-1]] * (len(threads) - len(per_thread))
    parameters: Json = {
        "threads": threads,
        "per_thread": per_thread,
        "jobmanagers": 2,
        "taskmanagers": 1,
        "taskmanager_slots": 2,
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("submission") as zookeeper:
            results = run(zookeeper, parameters)
            return cluster_document("submission", parameters, results, rows(results), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
