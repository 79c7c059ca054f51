"""A JobMaster of ``job-1`` for the tests that drive one by hand (no I/O): its graph pointer,
the leader's epoch and a time. Import as ``from jobmasters import ...`` (pytest puts this
folder on sys.path)."""

from __future__ import annotations

from steward.jobmanager.leader.jobmaster import JobMaster
from steward.wire.jobs import JobGraphPointer, JobSpec, NoRestart, RestartStrategy
from steward.wire.records import JobStatusRecord

NOW = 1000.0
EPOCH = 3
POINTER = JobGraphPointer(blob="jobgraphs/job-1/abc", sha256="0" * 64, epoch=EPOCH)


def make_master(
    strategy: RestartStrategy | None = None,
    *,
    record: JobStatusRecord | None = None,
    job_id: str = "job-1",
) -> JobMaster:
    spec = JobSpec(
        job_id=job_id,
        name="the job",
        restart_strategy=strategy if strategy is not None else NoRestart(),
    )
    return JobMaster(spec, POINTER, submitted_at=123.0, record=record)
