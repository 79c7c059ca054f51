"""CheckpointIDCounter and CompletedCheckpointStore against a real ZooKeeper.

The counter never hands out an id twice (seed 001's two leaders did); the store keeps the
newest N checkpoints, deletes the blobs of the dropped ones, and skips unreadable checkpoints
on recovery instead of failing the job.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from stores_support import Contender, blob_keys

from steward.errors import BlobStoreError, CorruptStateError
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.checkpoints import (
    BLOB_PREFIX,
    CheckpointIDCounter,
    CompletedCheckpointStore,
)
from steward.wire.records import CheckpointPointer, CompletedCheckpoint

pytestmark = pytest.mark.zookeeper

JOB = "job-1"


@pytest.fixture
def counter(session: Session) -> CheckpointIDCounter:
    return CheckpointIDCounter(session, JOB)


@pytest.fixture
def store(session: Session, blobs: BlobStore) -> CompletedCheckpointStore:
    return CompletedCheckpointStore(session, blobs, JOB, retained=3)


def _checkpoint(checkpoint_id: int, job_id: str = JOB) -> CompletedCheckpoint:
    return CompletedCheckpoint(
        job_id=job_id,
        checkpoint_id=checkpoint_id,
        attempt=1,
        created_at=time.time(),
        metadata={"batch": checkpoint_id, "offsets": {"topic-0": checkpoint_id * 100}},
    )


def _add(
    store: CompletedCheckpointStore, counter: CheckpointIDCounter, leader: Contender, count: int
) -> dict[int, CheckpointPointer]:
    pointers = {}
    for _ in range(count):
        cid = counter.get_and_increment(leader.fence)
        pointers[cid] = store.add(leader.fence, _checkpoint(cid))
    return pointers


# ---------------------------------------------------------------- the counter


def test_given_a_new_job_when_ids_are_drawn_then_they_start_at_one_and_go_up_by_one(
    counter: CheckpointIDCounter, leader: Contender
) -> None:
    assert counter.get() == 1

    drawn = [counter.get_and_increment(leader.fence) for _ in range(5)]

    assert drawn == [1, 2, 3, 4, 5]
    assert counter.get() == 6


def test_given_a_counter_when_set_then_the_next_id_is_the_value_set(
    counter: CheckpointIDCounter, leader: Contender
) -> None:
    counter.set(leader.fence, 40)

    assert counter.get_and_increment(leader.fence) == 40
    assert counter.get() == 41
    with pytest.raises(ValueError, match="start at 1"):
        counter.set(leader.fence, 0)


def test_given_two_threads_drawing_ids_concurrently_then_no_id_is_handed_out_twice(
    session: Session, leader: Contender
) -> None:
    per_thread = 50
    drawn: list[list[int]] = [[], []]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def draw(into: list[int]) -> None:
        counter = CheckpointIDCounter(session, JOB)
        start.wait()
        try:
            for _ in range(per_thread):
                into.append(counter.get_and_increment(leader.fence))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    everything = drawn[0] + drawn[1]
    assert sorted(everything) == list(range(1, 2 * per_thread + 1))
    assert all(ids == sorted(ids) for ids in drawn)
    assert CheckpointIDCounter(session, JOB).get() == 2 * per_thread + 1


@pytest.mark.parametrize("garbage", [b"seven", b"", b"0", b"-3", b"\xff", b"9" * 30])
def test_given_a_corrupt_counter_value_when_read_then_corrupt_state_is_raised(
    counter: CheckpointIDCounter, session: Session, leader: Contender, garbage: bytes
) -> None:
    counter.get_and_increment(leader.fence)
    session.client.set(session.layout.checkpoint_counter(JOB), garbage)

    with pytest.raises(CorruptStateError, match="checkpoint counter"):
        counter.get()
    with pytest.raises(CorruptStateError, match="checkpoint counter"):
        counter.get_and_increment(leader.fence)

    data, _stat = session.client.get(session.layout.checkpoint_counter(JOB))
    assert data == garbage  # not "repaired" by guessing


# ---------------------------------------------------------------- completed checkpoints


def test_given_five_checkpoints_with_three_retained_then_the_newest_three_and_their_blobs_remain(
    store: CompletedCheckpointStore,
    counter: CheckpointIDCounter,
    blobs: BlobStore,
    leader: Contender,
) -> None:
    pointers = _add(store, counter, leader, 5)

    assert store.checkpoint_ids() == [3, 4, 5]
    assert not blobs.exists(pointers[1].blob)
    assert not blobs.exists(pointers[2].blob)
    assert sorted(blob_keys(blobs, f"{BLOB_PREFIX}/{JOB}")) == sorted(
        pointers[cid].blob for cid in (3, 4, 5)
    )
    assert [store.get(cid).checkpoint_id for cid in (3, 4, 5)] == [3, 4, 5]


def test_given_a_job_without_a_checkpoints_container_then_its_first_checkpoint_makes_it(
    store: CompletedCheckpointStore,
    counter: CheckpointIDCounter,
    session: Session,
    leader: Contender,
) -> None:
    # As a submission leaves a job (issue 22): its node and status, no empty container.
    session.client.create(session.layout.job(JOB), b"")
    assert store.checkpoint_ids() == []
    assert store.latest().checkpoint is None

    _add(store, counter, leader, 2)

    assert session.client.exists(session.layout.checkpoints(JOB)) is not None
    assert store.checkpoint_ids() == [1, 2]


def test_given_checkpoints_when_asking_for_the_latest_then_the_newest_is_returned(
    store: CompletedCheckpointStore, counter: CheckpointIDCounter, leader: Contender
) -> None:
    assert store.latest().checkpoint is None
    assert store.latest().skipped == []
    _add(store, counter, leader, 5)

    latest = store.latest()

    assert latest.checkpoint is not None
    assert latest.checkpoint.checkpoint_id == 5
    assert latest.checkpoint.metadata == {"batch": 5, "offsets": {"topic-0": 500}}
    assert latest.skipped == []


def test_given_the_newest_checkpoint_blob_corrupt_when_asking_for_the_latest_then_the_previous_is_returned(  # noqa: E501
    store: CompletedCheckpointStore,
    counter: CheckpointIDCounter,
    blob_root: Path,
    leader: Contender,
) -> None:
    pointers = _add(store, counter, leader, 5)
    (blob_root / pointers[5].blob).write_bytes(b"garbage")

    latest = store.latest()

    assert latest.checkpoint is not None
    assert latest.checkpoint.checkpoint_id == 4
    [(skipped_id, error)] = latest.skipped
    assert skipped_id == 5
    assert isinstance(error, CorruptStateError)
    assert pointers[5].blob in str(error)


def test_given_every_checkpoint_unreadable_when_asking_for_the_latest_then_none_and_all_reported(
    store: CompletedCheckpointStore,
    counter: CheckpointIDCounter,
    session: Session,
    blob_root: Path,
    leader: Contender,
) -> None:
    pointers = _add(store, counter, leader, 5)
    (blob_root / pointers[5].blob).write_bytes(b"garbage")
    (blob_root / pointers[4].blob).unlink()
    session.client.set(session.layout.checkpoint(JOB, 3), b"{broken pointer")

    latest = store.latest()

    assert latest.checkpoint is None
    assert [cid for cid, _error in latest.skipped] == [5, 4, 3]
    errors = dict(latest.skipped)
    assert isinstance(errors[5], CorruptStateError)
    assert isinstance(errors[4], BlobStoreError)
    assert isinstance(errors[3], CorruptStateError)


def test_given_a_job_with_checkpoints_when_removed_then_every_znode_and_blob_of_it_is_gone(
    store: CompletedCheckpointStore,
    counter: CheckpointIDCounter,
    session: Session,
    blobs: BlobStore,
    leader: Contender,
) -> None:
    _add(store, counter, leader, 4)
    other_job = CompletedCheckpointStore(session, blobs, "job-2", retained=3)
    other_job.add(leader.fence, _checkpoint(1, job_id="job-2"))
    # A blob whose writer crashed before its pointer: it belongs to the job all the same.
    blobs.put(blobs.unique_key(f"{BLOB_PREFIX}/{JOB}"), b"orphan")

    store.remove_all(leader.fence)

    client = session.client
    assert client.exists(session.layout.checkpoint_counter(JOB)) is None
    assert client.exists(session.layout.checkpoints(JOB)) is None
    assert client.exists(session.layout.job(JOB)) is None
    assert store.checkpoint_ids() == []
    assert blob_keys(blobs, f"{BLOB_PREFIX}/{JOB}") == []
    assert counter.get() == 1
    # Only this job's state went.
    assert other_job.checkpoint_ids() == [1]
    assert len(blob_keys(blobs, f"{BLOB_PREFIX}/job-2")) == 1
    # And removing again is a no-op, as retried cleanups need.
    store.remove_all(leader.fence)


def test_given_a_checkpoint_of_another_job_when_added_then_value_error_and_nothing_written(
    store: CompletedCheckpointStore, blobs: BlobStore, leader: Contender
) -> None:
    with pytest.raises(ValueError, match="job-2"):
        store.add(leader.fence, _checkpoint(1, job_id="job-2"))

    assert store.checkpoint_ids() == []
    assert blob_keys(blobs, BLOB_PREFIX) == []
