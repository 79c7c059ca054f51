"""The content collector's round: its cost grows with what changed, not with everything stored.

For each ``--jobs`` count N, in a ZooKeeper root and a ``file://`` blob store of its own:

1. This process wins a :class:`LeaderElection` and stores ``--files`` content files and N job
   graphs (an ``--artifact-bytes`` pipeline each, naming one of the files), the graphs put from
   8 threads with ``JobGraphStore.put``. Not timed.
2. A :class:`ContentCollector` whose clock is an hour ahead (every file is past its retention,
   so every round must decide about every file) runs its first round: it reads every job graph
   blob, as every round did before the collector kept what each graph names. Then
   ``--rounds`` later rounds with nothing changed, then one round after 1 % new jobs, one
   round that reads every pointer again (a JobManager does every 36th round), then one
   round that deletes ``--orphans`` files no job names (each deletion fenced).
3. Timed: each ``collect()`` (the files' listing, the pointers' pipelined reads, the graphs not
   read before, the deletions). Graph blob reads are counted. The figure that matters is the
   ratio of a later round to the first, measured in the same run.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from _common import (
    Json,
    TempZooKeeper,
    job_counts,
    parser,
    progress,
    run_per_job_count,
    summary,
    summary_row,
    timed,
    wait_until,
)
from job_graph_store import job_graph
from steward.ha.election import LeaderElection
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.jobmanager.leader.content_gc import ContentCollector
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.store.job_graphs import JobGraphStore
from steward.wire.jobs import Dependency, DependencyKind, JobGraph, JobGraphPointer

ROOT = "/steward-bench/content-gc"
RETENTION = 3600.0
GOAL_RATIO = 0.25


class CountingGraphs(JobGraphStore):
    """The real store, counting the job graph blobs a round reads."""

    graphs_read = 0

    def graph_at(self, job_id: str, pointer: JobGraphPointer) -> JobGraph:
        self.graphs_read += 1
        return super().graph_at(job_id, pointer)


def store_files(contents: ContentStore, count: int, tag: str) -> list[tuple[str, int]]:
    stored = []
    for index in range(count):
        data = f"{tag} {index}\n".encode() + os.urandom(1024)
        sha = hashlib.sha256(data).hexdigest()
        contents.put(sha, [data])
        stored.append((sha, len(data)))
    return stored


def naming(graph: JobGraph, sha: str, size: int) -> JobGraph:
    dependency = Dependency(kind=DependencyKind.FILE, filename="lookup.csv", sha256=sha, size=size)
    spec = graph.spec.model_copy(update={"dependencies": [dependency]})
    return graph.model_copy(update={"spec": spec})


def put_jobs(
    graphs: JobGraphStore, fence: Fence, files: list[tuple[str, int]], indexes: range, size: int
) -> None:
    def put(index: int) -> None:
        sha, length = files[index % len(files)]
        graphs.put(fence, naming(job_graph(index, size), sha, length))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, indexes))


def timed_round(collector: ContentCollector, graphs: CountingGraphs) -> tuple[float, int, int]:
    """(seconds, graph blobs read, files deleted) of one round."""
    before = graphs.graphs_read
    deleted: list[str] = []
    seconds = timed(lambda: deleted.extend(collector.collect()))
    return seconds, graphs.graphs_read - before, len(deleted)


def measure(zookeeper: TempZooKeeper, jobs: int, args: Json) -> Json:
    blobs = BlobStore(f"file://{zookeeper.workdir / f'blobs-{jobs}'}")
    contents = ContentStore(blobs)
    with Session(zookeeper.connect_string, f"{ROOT}/n{jobs}", name=f"gc-{jobs}") as session:
        election = LeaderElection(session, "bench-leader", "benchmark").start()
        fence = wait_until(lambda: election.leadership, 30.0, "leadership").fence
        graphs = CountingGraphs(session, blobs)
        files = store_files(contents, min(args["files"], jobs), "named")
        progress(f"storing {jobs} job graphs")
        put_jobs(graphs, fence, files, range(jobs), args["artifact_bytes"])
        collector = ContentCollector(
            contents,
            graphs,
            RETENTION,
            fence=fence,
            clock=lambda: time.time() + 2 * RETENTION,
            full_check_every=args["rounds"] + 2,  # the round after the changed one
        )
        first = timed_round(collector, graphs)
        later = [timed_round(collector, graphs) for _ in range(args["rounds"])]
        added = max(1, jobs // 100)
        put_jobs(graphs, fence, files, range(jobs, jobs + added), args["artifact_bytes"])
        changed = timed_round(collector, graphs)
        full = timed_round(collector, graphs)
        store_files(contents, args["orphans"], "orphan")
        deleting = timed_round(collector, graphs)
        election.stop()
    if first[2] or full[2] or any(r[2] for r in later) or deleting[2] != args["orphans"]:
        raise RuntimeError(f"unexpected deletions: {first}, {later}, {deleting}")
    later_median = summary([r[0] for r in later], 6)["median"]
    progress(f"{jobs} jobs: first {first[0]:.3f}s, later {later_median:.4f}s")
    return {
        "first_round": {"seconds": round(first[0], 4), "graphs_read": first[1]},
        "later_rounds": {
            "seconds": summary([r[0] for r in later], 4),
            "graphs_read": [r[1] for r in later],
        },
        "later_over_first": round(later_median / first[0], 4),
        "after_new_jobs": {
            "new_jobs": added,
            "seconds": round(changed[0], 4),
            "graphs_read": changed[1],
        },
        "full_check_round": {"seconds": round(full[0], 4), "graphs_read": full[1]},
        "deleting_orphans": {
            "orphans": deleting[2],
            "seconds": round(deleting[0], 4),
            "per_deletion_ms": round((deleting[0] - later_median) / max(1, deleting[2]) * 1000, 3),
        },
    }


def rows(results: Json) -> list[Json]:
    table: list[Json] = []
    for jobs, doc in results.items():
        first = doc["first_round"]["seconds"]
        later = doc["later_rounds"]["seconds"]["median"]
        table += [
            summary_row(
                f"first round, {jobs} jobs (reads every graph)", first, "s", goal="", met=None
            ),
            summary_row(
                f"later round, {jobs} jobs, nothing changed",
                later,
                "s",
                goal="",
                met=None,
                note=f"graphs read: {doc['later_rounds']['graphs_read'][0]}",
                digits=4,
            ),
            summary_row(
                f"later / first round, {jobs} jobs",
                doc["later_over_first"],
                "ratio",
                goal=f"< {GOAL_RATIO}",
                met=doc["later_over_first"] < GOAL_RATIO,
                digits=4,
            ),
            summary_row(
                f"round after {doc['after_new_jobs']['new_jobs']} new jobs, {jobs} jobs",
                doc["after_new_jobs"]["seconds"],
                "s",
                goal="",
                met=None,
                note=f"graphs read: {doc['after_new_jobs']['graphs_read']}",
                digits=4,
            ),
            summary_row(
                f"full-check round (every pointer read again), {jobs} jobs",
                doc["full_check_round"]["seconds"],
                "s",
                goal="",
                met=None,
                note="every 36th round in a JobManager; graphs read: "
                f"{doc['full_check_round']['graphs_read']}",
                digits=4,
            ),
        ]
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated (1000,10000)")
    cli.add_argument("--artifact-bytes", type=int, default=16384, help="pipeline file size")
    cli.add_argument("--files", type=int, default=100, help="content files the jobs name")
    cli.add_argument("--rounds", type=int, default=5, help="later rounds timed")
    cli.add_argument("--orphans", type=int, default=50, help="unreferenced files deleted")
    args = cli.parse_args()
    parameters: Json = {
        "jobs": job_counts(args.jobs, args.quick, "50,200"),
        "artifact_bytes": args.artifact_bytes,
        "files": args.files,
        "rounds": args.rounds if not args.quick else 2,
        "orphans": args.orphans if not args.quick else 5,
        "quick": args.quick,
    }

    return run_per_job_count("content_gc", parameters, measure, rows, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
