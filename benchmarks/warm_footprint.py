"""What a warm standby holds per job: the decoded graph pointer, status record and execution
lease of every live job (``store/warm_records.py``), measured in this process with tracemalloc.

The records are those of a running job as a leader writes them after an adoption (one attempt
RUNNING on a TaskManager, the facts adoption needs), encoded at the default record format and
decoded as the standby decodes them, each job's own (distinct ids, blobs and times): Python's
heap for them is what the copy adds to a standby's memory (RSS grows by about as much, plus
the allocator's slack). No ZooKeeper, no processes: seconds.
"""

from __future__ import annotations

import gc
import hashlib
import sys
import time
import tracemalloc

from _common import Json, parser, process_document, run_main, summary_row
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import decode_pointer, decode_status, encode_pointer, encode_status
from steward.wire.records import AttemptRecord, ExecutionLease, JobStatusRecord
from steward.wire.states import AttemptState, JobState

RECORD_FORMAT = 2
"""``high-availability.zookeeper.record-format``'s default."""


def encoded(index: int) -> tuple[str, bytes, bytes, bytes]:
    """Job ``index``'s pointer, record and lease, as ZooKeeper holds them."""
    job_id = f"job-{index:05d}"
    now = time.time()
    pointer = JobGraphPointer(
        blob=f"jobgraphs/{job_id}/{index:016x}-0123456789ab",
        sha256=hashlib.sha256(job_id.encode()).hexdigest(),
        epoch=1,
    )
    attempt = AttemptRecord(
        number=1,
        taskmanager=f"tm-{index % 1000:04d}",
        epoch=1,
        state=AttemptState.RUNNING,
        started_at=now,
        adopted_by=[2],
    )
    record = JobStatusRecord(
        job_id=job_id,
        name=f"recovered {index}",
        state=JobState.RUNNING,
        submitted_at=now,
        updated_at=now,
        epoch=2,
        submitter="admin",
        attempts=[attempt],
        attempt_count=1,
        slots=1,
        queue="default",
        hookless=True,
    )
    lease = ExecutionLease(taskmanager=attempt.taskmanager, attempt=1, epoch=1)
    return (
        job_id,
        encode_pointer(pointer, RECORD_FORMAT, job_id),
        encode_status(record, RECORD_FORMAT),
        lease.to_json(),
    )


def held_bytes(jobs: int) -> tuple[int, int]:
    """Bytes of Python's heap that ``jobs`` decoded pointers, records and leases (held as the
    standby holds them) take, and the bytes of their znodes."""
    raw = [encoded(index) for index in range(jobs)]
    znode_bytes = sum(len(pointer) + len(record) + len(lease) for _, pointer, record, lease in raw)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    pointers: dict[str, JobGraphPointer] = {}
    records: dict[str, tuple[JobStatusRecord, int]] = {}
    leases: dict[str, ExecutionLease] = {}
    for job_id, pointer, record, lease in raw:
        pointers[job_id] = decode_pointer(pointer, job_id)
        records[job_id] = (decode_status(record, job_id), 1)
        leases[job_id] = ExecutionLease.from_json(lease)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(pointers) == len(records) == len(leases) == jobs
    return held, znode_bytes


def main() -> int:
    args = parser(__doc__).parse_args()
    jobs = [50] if args.quick else [1000, 10000]
    return run_main(lambda: measure(jobs, args.quick), args.verbose)


def measure(jobs: list[int], quick: bool) -> Json:
    points = []
    for count in jobs:
        held, znodes = held_bytes(count)
        points.append(
            {
                "jobs": count,
                "held_mib": round(held / 2**20, 2),
                "bytes_per_job": round(held / count),
                "znode_bytes_per_job": round(znodes / count),
            }
        )
    rows = [
        summary_row(
            f"warm standby's copy, {p['jobs']:,} jobs",
            p["held_mib"],
            unit="MiB",
            goal="",
            met=None,
            note=f"{p['bytes_per_job']} B a job (its znodes: {p['znode_bytes_per_job']} B)",
        )
        for p in points
    ]
    parameters = {"jobs": jobs, "quick": quick}
    return process_document("warm_footprint", parameters, {"points": points}, rows)


if __name__ == "__main__":
    sys.exit(main())
