"""The leader's archived-log retention round: two streamed listings, memory that does not grow
with the number of logs.

For each ``--jobs`` count N, in a ZooKeeper root and a ``file://`` storage of its own:

1. This process wins a :class:`LeaderElection` (the round's fence) and writes N x
   ``--attempts`` archived logs of ``--log-bytes`` each straight into ``logs/<job>/<n>.log``,
   their modification times spread over 30 days. Not timed.
2. Baseline, measured in the same run: one bare listing of the archive
   (:meth:`LogArchive.listing`, counted to the end).
3. Timed: a round with nothing to delete (age and size limits above what is stored), then a
   round whose size budget is 90 % of the total (it deletes the oldest tenth). The idle
   round's peak of Python memory is traced in an untimed round of its own: it must not grow
   with N.

The figures that matter: a round over the baseline listing (about 2: it lists twice), and the
peak memory per round at 10x the logs (about the same).
"""

from __future__ import annotations

import math
import os
import sys
import time
import tracemalloc

from _common import (
    Json,
    TempZooKeeper,
    job_counts,
    parser,
    progress,
    run_per_job_count,
    summary_row,
    timed,
    wait_until,
)
from steward.config.settings import LogArchiveSettings
from steward.ha.election import LeaderElection
from steward.ha.session import Session
from steward.jobmanager.log_retention import BUCKET, LogRetention
from steward.store.blob import BlobStore
from steward.store.log_archive import LogArchive

ROOT = "/steward-bench/log-retention"
SPREAD = 30 * 86400.0
GOAL_ROUND_OVER_LISTING = 3.0


def write_logs(archive: LogArchive, jobs: int, attempts: int, size: int) -> int:
    """Archived logs written directly (no fsync: setting up, not measured); total bytes."""
    payload, now, total = b"x" * size, time.time(), 0
    count = jobs * attempts
    for job in range(jobs):
        folder = archive.blobs.path(f"logs/job-{job:06d}")
        os.makedirs(folder, exist_ok=True)
        for attempt in range(1, attempts + 1):
            path = f"{folder}/{attempt}.log"
            with open(path, "wb") as log:
                log.write(payload)
            when = now - SPREAD * (job * attempts + attempt) / count
            os.utime(path, (when, when))
            total += size
    return total


def timed_round(retention: LogRetention) -> tuple[float, int]:
    """(seconds, logs deleted) of one round."""
    deleted: list[int] = []
    seconds = timed(lambda: deleted.append(retention.collect()))
    return seconds, deleted[0]


def peak_of_round(retention: LogRetention) -> int:
    """The peak of Python memory (bytes) one round allocates; traced in a round of its own
    (tracing slows Python several times: never in a timed round)."""
    tracemalloc.start()
    try:
        retention.collect()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(zookeeper: TempZooKeeper, jobs: int, args: Json) -> Json:
    storage = zookeeper.workdir / f"storage-{jobs}"
    storage.mkdir()
    archive = LogArchive(BlobStore(f"file://{storage}"))
    progress(f"writing {jobs * args['attempts']} archived logs")
    total = write_logs(archive, jobs, args["attempts"], args["log_bytes"])
    with Session(zookeeper.connect_string, f"{ROOT}/n{jobs}", name=f"lr-{jobs}") as session:
        election = LeaderElection(session, "bench-leader", "benchmark").start()
        fence = wait_until(lambda: election.leadership, 30.0, "leadership").fence
        listing = timed(lambda: sum(1 for _ in archive.listing()))
        keep_all = LogArchiveSettings(
            max_age=2 * SPREAD, max_total_size=2 * total, check_interval=1.0
        )
        idle_retention = LogRetention(archive, keep_all, fence=fence)
        idle = timed_round(idle_retention)
        peak = peak_of_round(idle_retention)
        budget = LogArchiveSettings(
            max_age=2 * SPREAD, max_total_size=int(total * 0.9), check_interval=1.0
        )
        deleting = timed_round(LogRetention(archive, budget, fence=fence))
        election.stop()
    logs = jobs * args["attempts"]
    per_bucket = math.ceil(logs * BUCKET / SPREAD) + 1  # the budget is met a bucket at a time
    if idle[1] or not 0 < deleting[1] <= logs // 10 + per_bucket:
        raise RuntimeError(f"unexpected deletions: {idle}, {deleting}")
    progress(f"{logs} logs: listing {listing:.3f}s, round {idle[0]:.3f}s")
    return {
        "logs": logs,
        "listing_seconds": round(listing, 4),
        "idle_round": {"seconds": round(idle[0], 4), "peak_bytes": peak},
        "idle_round_over_listing": round(idle[0] / listing, 3),
        "deleting_round": {
            "seconds": round(deleting[0], 4),
            "deleted": deleting[1],
        },
    }


def rows(results: Json) -> list[Json]:
    table: list[Json] = []
    for doc in results.values():
        logs = doc["logs"]
        table += [
            summary_row(
                f"retention round / bare listing, {logs} logs",
                doc["idle_round_over_listing"],
                "ratio",
                goal=f"< {GOAL_ROUND_OVER_LISTING}",
                met=doc["idle_round_over_listing"] < GOAL_ROUND_OVER_LISTING,
            ),
            summary_row(
                f"retention round peak memory, {logs} logs",
                doc["idle_round"]["peak_bytes"] / 1024,
                "KiB",
                goal="flat in the number of logs",
                met=None,
                digits=1,
            ),
            summary_row(
                f"round deleting the oldest tenth, {logs} logs",
                doc["deleting_round"]["seconds"],
                "s",
                goal="",
                met=None,
                note=f"deleted: {doc['deleting_round']['deleted']}",
            ),
        ]
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated (1000,10000)")
    cli.add_argument("--attempts", type=int, default=10, help="archived logs per job")
    cli.add_argument("--log-bytes", type=int, default=1024, help="size of each log")
    args = cli.parse_args()
    parameters: Json = {
        "jobs": job_counts(args.jobs, args.quick, "20,200"),
        "attempts": args.attempts if not args.quick else 3,
        "log_bytes": args.log_bytes,
        "quick": args.quick,
    }

    return run_per_job_count("log_retention", parameters, measure, rows, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
