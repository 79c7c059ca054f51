"""Doctor cost: what one ``steward doctor`` report costs, against what a new leader reads.

For each N (100 and 1,000 jobs; ``--quick``: 20 and 100) in a fresh namespace of a real
ZooKeeper, N jobs are written as a leader leaves them (a job graph blob and its fenced pointer,
a status record; recovery_scaling.py's writer, not timed). Then, alternating over
``--repeats`` rounds in this process:

- ``baseline``: the reads of a new leader's recovery (every job graph read back with its
  blob, every result, every status record);
- ``doctor``: :func:`steward.doctor.examine` as ``GET /v1/doctor`` runs it (every znode the
  invariants are about, one listing of the blob storage, the server asked srvr and conf);
- ``doctor --verify-blobs``: the same, every blob read back and its checksum checked.

Reported by medians, as ratios to the baseline (goal: a report costs no more than a recovery,
ratio <= 1.5 with the blobs verified) and per job.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

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
from recovery_scaling import persist_jobs
from steward.doctor import examine
from steward.ha.acl import OPEN
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore
from steward.wire.doctor import DoctorReport

ROOT = "/steward-bench/doctor"


def recovery_reads(session: Session, blobs: BlobStore) -> int:
    """What a new leader reads: graphs (with their blobs), results, status records."""
    graphs = JobGraphStore(session, blobs).recover_all()
    JobResultStore(session, blobs).nodes()  # what recovery reads: the indexes alone
    statuses = JobStatusStore(session)
    for job_id in statuses.job_ids():
        statuses.find_quietly(job_id)
    return len(graphs)


def check_healthy(report: DoctorReport) -> None:
    """Nothing wrong but the one thing true here: no JobManager runs (none is needed)."""
    found = [f for f in report.findings if f.check != "no-jobmanager"]
    if found:
        raise RuntimeError(f"a healthy state had findings: {found}")


def measure(zookeeper: TempZooKeeper, jobs: int, repeats: int) -> Json:
    root = f"{ROOT}-{jobs}"
    with tempfile.TemporaryDirectory(prefix="steward-bench-doctor-") as storage:
        written = persist_jobs(zookeeper.connect_string, root, storage, jobs, OPEN)
        progress(f"{jobs} jobs written in {written:.1f}s")
        blobs = BlobStore(storage)
        ways = {
            "baseline": lambda session: recovery_reads(session, blobs),
            "doctor": lambda session: examine(session, blobs, "bench"),
            "doctor_verify": lambda session: examine(session, blobs, "bench", verify_blobs=True),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        with Session(zookeeper.connect_string, root, name="bench-doctor").start() as session:
            for round_index in range(repeats):
                for name in rotated(list(ways), round_index):
                    started = time.perf_counter()
                    outcome = ways[name](session)
                    times[name].append(time.perf_counter() - started)
                    if isinstance(outcome, DoctorReport):
                        check_healthy(outcome)
    medians = {name: statistics.median(values) for name, values in times.items()}
    progress(f"{jobs} jobs: " + ", ".join(f"{k} {v:.3f}s" for k, v in medians.items()))
    return {
        "jobs": jobs,
        "seconds": {name: [round(v, 4) for v in values] for name, values in times.items()},
        "median_s": {name: round(value, 4) for name, value in medians.items()},
        "doctor_over_baseline": round(medians["doctor"] / medians["baseline"], 3),
        "verify_over_baseline": round(medians["doctor_verify"] / medians["baseline"], 3),
        "doctor_ms_per_job": round(medians["doctor"] / jobs * 1000, 3),
    }


def rows(points: list[Json]) -> list[Json]:
    result = []
    for point in points:
        verify = point["verify_over_baseline"]
        result.append(
            summary_row(
                f"doctor report over a recovery's reads, {point['jobs']:,} jobs",
                point["doctor_over_baseline"],
                "ratio",
                goal="<= 1.5 (--verify-blobs)",
                met=verify <= 1.5,
                note=f"--verify-blobs {verify:.2f}x; {point['doctor_ms_per_job']:.3f} ms per job",
            )
        )
    return result


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated (100,1000)")
    cli.add_argument("--repeats", type=int, default=5)
    args = cli.parse_args()
    counts = [int(n) for n in (args.jobs or ("20,100" if args.quick else "100,1000")).split(",")]
    repeats = 2 if args.quick else args.repeats
    parameters: Json = {"jobs": counts, "repeats": repeats, "quick": args.quick}

    def body() -> Json:
        with temp_zookeeper("doctor-cost") as zookeeper:
            points = [measure(zookeeper, n, repeats) for n in counts]
            return cluster_document(
                "doctor_cost", parameters, {"points": points}, rows(points), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
