"""JobGraphStore throughput and footprint: put N job graphs, then recover them all.

1. This process wins a :class:`LeaderElection`, then puts ``--jobs`` job graphs (a generated
   ``--artifact-bytes`` PySpark pipeline file each, different per job) one after another with
   ``JobGraphStore.put(fence, graph)``: a blob written to a ``file://`` store in the temporary
   directory, then a fenced ``create`` of ``jobgraphs/<job-id>``. Building the graphs is not
   timed.
2. ``recover_all(parallelism=p)`` for each ``--parallelism``, ``--repeats`` times in rotating
   order. Each recovery opens a fresh session and a fresh store, as a new leader would, so
   nothing is cached in Steward or kazoo (the blob files are in the OS page cache: this is
   the store's cost, not the disk's). Opening the session is not timed.
3. The footprint. ZooKeeper bytes per job: over every ``jobgraphs/*`` znode, the length of its
   data plus the length of its full path (what ZooKeeper's ``zk_approximate_data_size`` counts,
   reported too as a cross-check; the server's per-znode overhead, a stat and map entries, is
   not counted). Blob bytes per job: the size of every file under the store's ``jobgraphs/``
   (the header line plus the job graph's JSON).
"""

from __future__ import annotations

import base64
import hashlib
import sys
import time
from pathlib import Path

from _common import (
    Json,
    TempZooKeeper,
    document,
    parser,
    percentile,
    progress,
    rotated,
    run_main,
    summary,
    temp_zookeeper,
    timed,
    wait_until,
)
from steward.ha.election import LeaderElection
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import BLOB_PREFIX, JobGraphStore, RecoveredJobGraph
from steward.wire.jobs import Artifact, ArtifactKind, JobGraph, JobSpec

ROOT = "/steward-bench/job-graphs"

PIPELINE = '''"""Daily rollup of {job_id}: read the raw events, aggregate, write one partition."""

from pyspark.sql import functions as F


def main(ctx):
    day = ctx.args[0] if ctx.args else "2024-01-01"
    events = ctx.spark.read.parquet(f"s3://lake/raw/events/day={{day}}")
    clean = events.where(F.col("user_id").isNotNull()).dropDuplicates(["event_id"])
    rollup = ctx.stage(
        "rollup",
        lambda: clean.groupBy("country", "device").agg(
            F.count("*").alias("events"),
            F.countDistinct("user_id").alias("users"),
            F.sum("revenue").alias("revenue"),
        ),
    )
    rollup.write.mode("overwrite").parquet(f"s3://lake/rollups/{job_id}/day={{day}}")
    ctx.report_progress(rows=rollup.count())
    return {{"day": day, "rows": rollup.count()}}
'''


def pipeline_code(job_id: str, size: int) -> bytes:
    """A plausible pipeline file of ``size`` bytes (padded with comments; never truncated)."""
    code = PIPELINE.format(job_id=job_id)
    padding = f"# padding for {job_id}: every benchmark artifact has the same size\n"
    while len(code) + len(padding) <= size:
        code += padding
    if len(code) < size:
        code += "#" * (size - len(code) - 1) + "\n"
    return code.encode()


def job_graph(index: int, artifact_bytes: int) -> JobGraph:
    job_id = f"bench-job-{index:06d}"
    code = pipeline_code(job_id, artifact_bytes)
    artifact = Artifact(
        filename="pipeline.py",
        kind=ArtifactKind.PYTHON_FILE,
        sha256=hashlib.sha256(code).hexdigest(),
        data_b64=base64.b64encode(code).decode(),
    )
    spec = JobSpec(job_id=job_id, name=f"rollup {index}", args=["2024-01-01"])
    return JobGraph(spec=spec, artifact=artifact, submitted_at=time.time())


def put_all(store: JobGraphStore, fence: Fence, graphs: list[JobGraph]) -> Json:
    latencies = []
    clock = time.perf_counter
    started = clock()
    for graph in graphs:
        before = clock()
        store.put(fence, graph)
        latencies.append(clock() - before)
    seconds = clock() - started
    return {
        "seconds": round(seconds, 3),
        "jobs_per_s": round(len(graphs) / seconds, 1),
        "latency_ms": {
            "p50": round(percentile(latencies, 0.50) * 1000, 3),
            "p99": round(percentile(latencies, 0.99) * 1000, 3),
        },
    }


def recover_once(quorum: str, blob_url: str, parallelism: int, expected: int) -> float:
    """Seconds one fresh store takes to recover every job graph; raises if any is missing."""
    with Session(quorum, ROOT, name=f"bench-recover-{parallelism}") as session:
        store = JobGraphStore(session, BlobStore(blob_url))
        recovered: list[RecoveredJobGraph] = []
        seconds = timed(lambda: recovered.extend(store.recover_all(parallelism=parallelism)))
    failed = [r for r in recovered if r.graph is None]
    if len(recovered) != expected or failed:
        raise RuntimeError(f"recovered {len(recovered)} of {expected}, {len(failed)} failed")
    return seconds


def recover_all(
    quorum: str, blob_url: str, parallelisms: list[int], repeats: int, jobs: int
) -> Json:
    seconds: dict[int, list[float]] = {p: [] for p in parallelisms}
    for repeat in range(repeats):
        for parallelism in rotated(parallelisms, repeat):
            took = recover_once(quorum, blob_url, parallelism, jobs)
            seconds[parallelism].append(took)
            progress(f"recover_all parallelism={parallelism}: {took:.3f}s")
    return {
        f"parallelism_{p}": {
            "seconds": summary(s, 3),
            "jobs_per_s": round(jobs / summary(s, 6)["median"], 1),
        }
        for p, s in seconds.items()
    }


def zookeeper_bytes(session: Session) -> tuple[int, int]:
    """(data bytes, path bytes) summed over every ``jobgraphs/*`` znode."""
    parent = session.layout.jobgraphs
    data_bytes = path_bytes = 0
    for child in session.client.get_children(parent):
        path = f"{parent}/{child}"
        data, _stat = session.client.get(path)
        data_bytes += len(data)
        path_bytes += len(path.encode())
    return data_bytes, path_bytes


def blob_bytes(blob_dir: Path) -> tuple[int, int]:
    """(total bytes, file count) of the job graph blobs."""
    files = [p for p in (blob_dir / BLOB_PREFIX).rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def footprint(session: Session, blob_dir: Path, jobs: int, zk_size_delta: int) -> Json:
    data, paths = zookeeper_bytes(session)
    blobs, files = blob_bytes(blob_dir)
    if files != jobs:
        raise RuntimeError(f"{files} blob files for {jobs} jobs")
    return {
        "zookeeper_bytes_per_job": round((data + paths) / jobs, 1),
        "zookeeper_data_bytes_per_job": round(data / jobs, 1),
        "zookeeper_path_bytes_per_job": round(paths / jobs, 1),
        "zookeeper_approximate_data_size_delta_per_job": round(zk_size_delta / jobs, 1),
        "blob_bytes_per_job": round(blobs / jobs, 1),
    }


def approximate_data_size(zookeeper: TempZooKeeper) -> int:
    return int(zookeeper.monitor().get("zk_approximate_data_size", "0"))


def run(zookeeper: TempZooKeeper, args: Json) -> Json:
    jobs = args["jobs"]
    blob_dir = zookeeper.workdir / "blobs"
    blob_url = f"file://{blob_dir}"
    graphs = [job_graph(i, args["artifact_bytes"]) for i in range(jobs)]
    quorum = zookeeper.connect_string
    with Session(quorum, ROOT, name="bench-leader") as session:
        election = LeaderElection(session, "bench-leader", "benchmark").start()
        fence = wait_until(lambda: election.leadership, 30.0, "leadership").fence
        size_before = approximate_data_size(zookeeper)
        progress(f"putting {jobs} job graphs ({args['artifact_bytes']} B artifacts)")
        put = put_all(JobGraphStore(session, BlobStore(blob_url)), fence, graphs)
        progress(f"put: {put['seconds']}s, {put['jobs_per_s']} jobs/s")
        size_delta = approximate_data_size(zookeeper) - size_before
        sizes = footprint(session, blob_dir, jobs, size_delta)
        recovery = recover_all(quorum, blob_url, args["parallelism"], args["repeats"], jobs)
        election.stop()
    graph_json = len(graphs[0].to_json())
    return {"put": put, "recover": recovery, **sizes, "job_graph_json_bytes": graph_json}


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="job graphs to put (default 1000)")
    cli.add_argument("--artifact-bytes", type=int, default=2048, help="pipeline file size")
    cli.add_argument("--parallelism", default="1,8", help="recover_all parallelisms (1,8)")
    cli.add_argument("--repeats", type=int, default=None, help="recoveries per parallelism (3)")
    args = cli.parse_args()
    parameters: Json = {
        "jobs": args.jobs or (50 if args.quick else 1000),
        "artifact_bytes": args.artifact_bytes,
        "parallelism": [int(p) for p in args.parallelism.split(",")],
        "repeats": args.repeats or (1 if args.quick else 3),
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("job-graphs") as zookeeper:
            results = run(zookeeper, parameters)
            return document("job_graph_store", parameters, results, zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
