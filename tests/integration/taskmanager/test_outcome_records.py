"""An ended attempt's lease goes with its outcome record, in one multi-op (store/outcomes.py).

The record is what a leader settles the attempt from when the TaskManager dies before its
report arrives; these tests check the TaskManager's half against a real ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steward.ha.election import Leadership
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.checkpoints import CompletedCheckpointStore, ensure_job_node
from steward.store.leases import ExecutionLeases, Released
from steward.store.outcomes import MAX_RECORD_BYTES, TOO_LARGE_ERROR, AttemptOutcomes
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent, FinishedEvent

pytestmark = pytest.mark.zookeeper

Leases = Callable[..., ExecutionLeases]


@pytest.fixture
def reader(leader: Leadership, tm_session: Callable[..., Session]) -> Session:
    """A session that reads the records, job-a's node made by the leader."""
    session = tm_session("reader")
    ensure_job_node(session.client, session.layout, leader.fence, "job-a")
    return session


@pytest.fixture
def tm1(leases: Leases) -> ExecutionLeases:
    return leases("tm-1")


def test_release_with_an_outcome_deletes_the_lease_and_records_the_outcome(
    leader: Leadership, reader: Session, tm1: ExecutionLeases
) -> None:
    tm1.acquire("job-a", attempt=3, epoch=leader.epoch)
    outcome = FinishedEvent(value={"rows": 42})

    assert tm1.release_recording("job-a", 3, outcome) is Released.RECORDED

    assert tm1.held("job-a") is None
    record = AttemptOutcomes(reader).find("job-a", 3)
    assert record is not None
    assert (record.taskmanager, record.epoch, record.outcome) == ("tm-1", leader.epoch, outcome)
    assert AttemptOutcomes(reader).find("job-a", 2) is None


def test_a_lease_that_is_not_ours_is_neither_released_nor_recorded(
    leader: Leadership, reader: Session, tm1: ExecutionLeases, leases: Leases
) -> None:
    tm2 = leases("tm-2")
    tm1.acquire("job-a", attempt=1, epoch=leader.epoch)

    assert tm2.release_recording("job-a", 1, FinishedEvent()) is Released.NOT_OURS
    assert tm1.release_recording("job-a", 2, FinishedEvent()) is Released.NOT_OURS

    assert tm1.held("job-a") is not None
    assert AttemptOutcomes(reader).find("job-a", 1) is None


def test_without_the_jobs_node_the_lease_is_released_alone(
    leader: Leadership, leases: Leases, tm_session: Callable[..., Session]
) -> None:
    session = tm_session("reader")
    tm1 = leases("tm-1")
    tm1.acquire("job-gone", attempt=1, epoch=leader.epoch)

    assert tm1.release_recording("job-gone", 1, FinishedEvent()) is Released.RELEASED

    assert tm1.held("job-gone") is None
    assert session.client.exists(session.layout.job("job-gone")) is None


def test_an_outcome_too_large_for_a_record_is_recorded_as_the_failure_it_would_be(
    leader: Leadership, reader: Session, tm1: ExecutionLeases
) -> None:
    tm1.acquire("job-a", attempt=1, epoch=leader.epoch)

    big = FinishedEvent(value="x" * (MAX_RECORD_BYTES + 1))
    assert tm1.release_recording("job-a", 1, big) is Released.RECORDED

    record = AttemptOutcomes(reader).find("job-a", 1)
    assert record is not None and isinstance(record.outcome, FailedEvent)
    assert record.outcome.error.type == TOO_LARGE_ERROR


def test_a_leader_removes_a_record_and_the_jobs_cleanup_removes_the_rest(
    leader: Leadership, reader: Session, tm1: ExecutionLeases, tmp_path: Path
) -> None:
    failed = FailedEvent(error=ErrorInfo(type="ValueError", message="bad row"))
    for attempt in (1, 2):
        tm1.acquire("job-a", attempt=attempt, epoch=leader.epoch)
        assert tm1.release_recording("job-a", attempt, failed) is Released.RECORDED
    outcomes = AttemptOutcomes(reader)

    outcomes.remove(leader.fence, "job-a", 1)
    outcomes.remove(leader.fence, "job-a", 1)  # idempotent
    assert outcomes.find("job-a", 1) is None and outcomes.find("job-a", 2) is not None

    blobs = BlobStore(f"file://{tmp_path}/blobs")
    CompletedCheckpointStore(reader, blobs, "job-a", retained=1).remove_all(leader.fence)
    assert reader.client.exists(reader.layout.job("job-a")) is None


def test_the_taskmanager_drops_its_record_once_the_outcome_is_acknowledged(
    leader: Leadership, reader: Session, tm1: ExecutionLeases
) -> None:
    tm1.acquire("job-a", attempt=1, epoch=leader.epoch)
    tm1.release_recording("job-a", 1, FinishedEvent())

    tm1.drop_outcome("job-a", 1)
    tm1.drop_outcome("job-a", 1)  # already gone: no error

    assert AttemptOutcomes(reader).find("job-a", 1) is None
