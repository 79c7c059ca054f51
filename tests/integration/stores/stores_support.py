"""Helpers of the store contract tests (fixtures are in this folder's conftest.py)."""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass

from steward.ha.election import LeaderElection, Leadership
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore
from steward.wire.jobs import Artifact, ArtifactKind, JobGraph, JobSpec
from steward.wire.records import ErrorInfo, JobResultEntry, JobStatusRecord
from steward.wire.states import JobState, TerminalState


@dataclass
class Contender:
    """A JobManager's ZooKeeper side as far as the stores care: its session and its term."""

    session: Session
    election: LeaderElection
    leadership: Leadership

    @property
    def fence(self) -> Fence:
        return self.leadership.fence


def make_graph(job_id: str, code: str = "def main(ctx):\n    return 1\n") -> JobGraph:
    data = code.encode()
    return JobGraph(
        spec=JobSpec(job_id=job_id, name=f"pipeline {job_id}", args=["--n", "3"]),
        artifact=Artifact(
            filename="pipeline.py",
            kind=ArtifactKind.PYTHON_FILE,
            sha256=hashlib.sha256(data).hexdigest(),
            data_b64=base64.b64encode(data).decode(),
        ),
        submitted_at=time.time(),
    )


def blob_keys(blobs: BlobStore, prefix: str) -> list[str]:
    return [info.key for info in blobs.list(prefix)]


def znode_snapshot(session: Session, path: str) -> dict[str, tuple[bytes, int]]:
    """``{path: (data, mzxid)}`` of ``path`` and every znode below it."""
    client = session.client
    snapshot: dict[str, tuple[bytes, int]] = {}
    pending = [path]
    while pending:
        current = pending.pop()
        stat = client.exists(current)
        if stat is None:
            continue
        data, stat = client.get(current)
        snapshot[current] = (bytes(data or b""), stat.mzxid)
        pending.extend(f"{current}/{child}" for child in client.get_children(current))
    return snapshot


def status_record(
    leader: Contender, job_id: str, state: JobState, reason: str | None = None
) -> JobStatusRecord:
    now = time.time()
    return JobStatusRecord(
        job_id=job_id,
        name="etl",
        state=state,
        reason=reason,
        submitted_at=now,
        updated_at=now,
        epoch=leader.leadership.epoch,
        submitter="alice",
    )


def write_status(
    leader: Contender, job_id: str, state: JobState, reason: str | None = None
) -> None:
    """The job's status record at ``state``, written through the leader's fence."""
    JobStatusStore(leader.session).write(leader.fence, status_record(leader, job_id, state, reason))


def write_statuses(leader: Contender, job_ids: list[str], state: JobState) -> None:
    """The jobs' status records at ``state``, in the leader's batched fenced writes."""
    records = [status_record(leader, job_id, state) for job_id in job_ids]
    JobStatusStore(leader.session).write_many(leader.fence, records)


def write_failed_result(leader: Contender, blobs: BlobStore, job_id: str) -> None:
    """The job's result (FAILED, a ValueError), created DIRTY through the leader's fence."""
    entry = JobResultEntry(
        job_id=job_id,
        state=TerminalState.FAILED,
        error=ErrorInfo(type="ValueError", message="bad input"),
        finished_at=time.time(),
        name="etl",
        epoch=leader.leadership.epoch,
        submitter="alice",
    )
    JobResultStore(leader.session, blobs).create_dirty(leader.fence, entry)
