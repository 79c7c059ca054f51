"""Result store cost: ZooKeeper bytes per finished job, and what reading a result costs.

For each N (10,000; ``--quick``: 200; ``--results 10000,100000`` for more) in a fresh
namespace of a real standalone ZooKeeper and a file:// blob store on disk, N results are
written as a leader writes them (:meth:`JobResultStore.create_dirty` then ``mark_clean``,
fenced, 16 writer threads; a typical failed job's result: a small value, an error with a 4 KB
traceback, five attempts). Up to 2,000 of them are also written the way Steward kept them
before (the whole entry in ``results/<job-id>``), in a namespace of their own, for comparison
(per job it is the same at any N; 100,000 of them would hold 570 MB in ZooKeeper's heap).

- **ZooKeeper bytes per finished job**: the delta of ``mntr``'s ``zk_approximate_data_size``
  (ZooKeeper's own count: each node's path plus its data) over the N writes, divided by N;
  the index's data alone is reported too. Goal: under 200 B.
- **Read latency**: ``--reads`` results picked at random, read in alternating rounds as
  ``steward result`` and the API read them (:meth:`JobResultStore.get`: the index, then the
  body from blob storage, checksum verified) and as a plain ZooKeeper ``get`` of the same
  index node (the floor: one round trip). Reported as medians per read and their ratio.
- **Index scan**: what recovery and a retention round read (:meth:`JobResultStore.nodes`,
  every index, no body): seconds per 1,000 results.

What it leaves out: ZooKeeper's own per-node overhead in the JVM (the DataNode, its stat and
the path's hash-map entry: roughly another 100-150 B a node, the same for either format), and
an object store's latency (s3:// adds a request per read).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    rotated,
    run_main,
    summary_row,
    temp_zookeeper,
)
from steward.ha.election import LeaderElection
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.results import JobResultStore
from steward.testing.waiting import wait_until
from steward.wire.records import AttemptRecord, ErrorInfo, JobResultEntry
from steward.wire.states import AttemptState, CleanupStatus, TerminalState

ROOT = "/steward/"
"""Each namespace's root is as long as the default one (``/steward/default``), and job ids are
as long as generated ones (``job-`` and 12 hex digits): ZooKeeper counts every node's path."""
WRITERS = 16
LEGACY_SAMPLE = 2000
GOAL_BYTES = 200


def typical_result(index: int, epoch: int) -> JobResultEntry:
    """A failed job's result as a leader records it (the final error keeps its traceback)."""
    now = time.time()
    attempts = [
        AttemptRecord(number=n, taskmanager=f"tm-{n % 7}", epoch=epoch, state=AttemptState.FAILED)
        for n in range(1, 6)
    ]
    return JobResultEntry(
        job_id=f"job-{index:012x}",
        state=TerminalState.FAILED,
        value={"rows": index, "output": f"s3://warehouse/daily/{index}"},
        error=ErrorInfo(type="ValueError", message="bad row", traceback="  File x\n" * 450),
        submitted_at=now - 60.0,
        finished_at=now,
        name=f"daily-{index % 100}",
        attempts=attempts,
        attempt_count=5,
        failures=5,
        labels={"team": "data", "dag": f"dag-{index % 40}"},
        epoch=epoch,
        submitter="orchestrator",
    )


def approximate_size(zookeeper: TempZooKeeper) -> int:
    return int(zookeeper.monitor()["zk_approximate_data_size"])


def write_results(session: Session, fence: Fence, store: JobResultStore, count: int) -> float:
    def write(index: int) -> None:
        store.create_dirty(fence, typical_result(index, fence.epoch))
        store.mark_clean(fence, f"job-{index:012x}")

    started = time.perf_counter()
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(count)))
    return time.perf_counter() - started


def write_legacy(session: Session, epoch: int, count: int) -> None:
    """The format before: the whole (CLEAN) entry in the node, as Steward kept it until now."""
    layout = session.layout
    session.client.ensure_path(layout.results)

    def write(index: int) -> None:
        entry = typical_result(index, epoch).model_copy(update={"status": CleanupStatus.CLEAN})
        session.client.create(layout.result(entry.job_id), entry.to_json())

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(count)))


def time_reads(session: Session, store: JobResultStore, ids: list[str], rounds: int) -> Json:
    paths = [session.layout.result(job_id) for job_id in ids]
    ways = {
        "result_get": lambda: [store.get(job_id) for job_id in ids],
        "zookeeper_get": lambda: [session.client.get(path) for path in paths],
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for round_index in range(rounds):
        for name in rotated(list(ways), round_index):
            started = time.perf_counter()
            ways[name]()
            times[name].append((time.perf_counter() - started) / len(ids))
    return {name: statistics.median(values) for name, values in times.items()}


def measure(zookeeper: TempZooKeeper, count: int, reads: int, rounds: int) -> Json:
    with tempfile.TemporaryDirectory(prefix="steward-bench-results-") as storage:
        store_root, legacy_root = f"{ROOT}s{count % 10**6:06d}", f"{ROOT}l{count % 10**6:06d}"
        with Session(zookeeper.connect_string, store_root, name="bench-results").start() as s:
            election = LeaderElection(s, "bench-results", "benchmark").start()
            fence = wait_until(lambda: election.leadership, 30.0, "leadership").fence
            store = JobResultStore(s, BlobStore(f"file://{storage}"))
            before = approximate_size(zookeeper)
            seconds = write_results(s, fence, store, count)
            after = approximate_size(zookeeper)
            progress(f"{count} results written in {seconds:.1f}s")
            index_bytes = len(s.client.get(s.layout.result("job-000000000000"))[0])
            ids = random.Random(count).sample([f"job-{i:012x}" for i in range(count)], reads)
            latency = time_reads(s, store, ids, rounds)
            started = time.perf_counter()
            scanned = len(store.nodes())
            scan = time.perf_counter() - started
            election.stop()
        with Session(zookeeper.connect_string, legacy_root, name="bench-legacy").start() as s:
            legacy_before = approximate_size(zookeeper)
            legacy_count = min(count, LEGACY_SAMPLE)
            write_legacy(s, fence.epoch, legacy_count)
            legacy_after = approximate_size(zookeeper)
    per_job = (after - before) / count
    legacy_per_job = (legacy_after - legacy_before) / legacy_count
    progress(f"{count}: {per_job:.0f} B/job in ZooKeeper (before: {legacy_per_job:.0f})")
    return {
        "results": count,
        "write_seconds": round(seconds, 2),
        "zookeeper_bytes_per_job": round(per_job, 1),
        "index_data_bytes": index_bytes,
        "legacy_zookeeper_bytes_per_job": round(legacy_per_job, 1),
        "read_ms": {name: round(value * 1000, 3) for name, value in latency.items()},
        "read_over_zookeeper_get": round(latency["result_get"] / latency["zookeeper_get"], 2),
        "index_scan_s_per_1000": round(scan / scanned * 1000, 4),
    }


def rows(points: list[Json]) -> list[Json]:
    result = []
    for point in points:
        n = f"{point['results']:,} results"
        result.append(
            summary_row(
                f"ZooKeeper bytes per finished job, {n}",
                point["zookeeper_bytes_per_job"],
                "B",
                goal=f"< {GOAL_BYTES}",
                met=point["zookeeper_bytes_per_job"] < GOAL_BYTES,
                note="before (whole entry in ZooKeeper):"
                f" {point['legacy_zookeeper_bytes_per_job']:.0f} B",
            )
        )
        result.append(
            summary_row(
                f"result read (index + blob body) over a plain ZooKeeper get, {n}",
                point["read_over_zookeeper_get"],
                "ratio",
                goal="(measured)",
                met=None,
                note=f"{point['read_ms']['result_get']:.2f} ms vs"
                f" {point['read_ms']['zookeeper_get']:.2f} ms per read",
            )
        )
    return result


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--results", default=None, help="result counts, comma-separated (10000)")
    cli.add_argument("--reads", type=int, default=1000, help="results read per round")
    cli.add_argument("--rounds", type=int, default=5)
    args = cli.parse_args()
    counts = [int(n) for n in (args.results or ("200" if args.quick else "10000")).split(",")]
    reads, rounds = (50, 2) if args.quick else (args.reads, args.rounds)
    parameters: Json = {"results": counts, "reads": reads, "rounds": rounds, "quick": args.quick}

    def body() -> Json:
        with temp_zookeeper("result-store") as zookeeper:
            points = [measure(zookeeper, n, min(reads, n), rounds) for n in counts]
            return cluster_document(
                "result_store", parameters, {"points": points}, rows(points), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
