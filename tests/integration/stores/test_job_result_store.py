"""JobResultStore against a real ZooKeeper (seed 003): results outlive their jobs.

An entry is created DIRTY when a job becomes globally terminal and marked CLEAN after its HA
data is cleaned up; it stays readable whatever happens to the job graph or the leadership.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from stores_support import Contender, make_graph

from steward.errors import CorruptStateError, JobExistsError, JobNotFoundError
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.results import MAX_ENTRY_BYTES, JobResultStore, ResultTooLargeError
from steward.wire.records import ErrorInfo, JobResultEntry
from steward.wire.states import CleanupStatus, TerminalState

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def store(session: Session, blobs: BlobStore) -> JobResultStore:
    return JobResultStore(session, blobs)


def _failed(job_id: str, epoch: int) -> JobResultEntry:
    return JobResultEntry(
        job_id=job_id,
        state=TerminalState.FAILED,
        value={"rows": 12, "path": "s3://bucket/out"},
        error=ErrorInfo(type="ValueError", message="bad row 7", traceback="Traceback ..."),
        submitted_at=1_700_000_000.0,
        finished_at=1_700_000_060.5,
        epoch=epoch,
    )


def _finished(job_id: str, epoch: int, value: object = 42) -> JobResultEntry:
    return JobResultEntry(
        job_id=job_id,
        state=TerminalState.FINISHED,
        value=value,
        finished_at=time.time(),
        epoch=epoch,
    )


def test_given_a_dirty_result_when_found_then_it_has_state_value_error_and_timestamps(
    store: JobResultStore, leader: Contender
) -> None:
    entry = _failed("job-1", leader.leadership.epoch)

    store.create_dirty(leader.fence, entry)

    found = store.find("job-1")
    assert found == entry
    assert found is not None
    assert found.status is CleanupStatus.DIRTY
    assert found.state is TerminalState.FAILED
    assert found.value == {"rows": 12, "path": "s3://bucket/out"}
    assert found.error == ErrorInfo(
        type="ValueError", message="bad row 7", traceback="Traceback ..."
    )
    assert (found.submitted_at, found.finished_at, found.cleaned_at) == (
        1_700_000_000.0,
        1_700_000_060.5,
        None,
    )
    assert store.has_result("job-1")
    assert store.job_ids() == ["job-1"]
    assert store.list_dirty() == [entry]


def test_given_no_result_when_looked_up_then_find_is_none_and_get_raises(
    store: JobResultStore,
) -> None:
    assert store.find("job-1") is None
    assert not store.has_result("job-1")
    with pytest.raises(JobNotFoundError, match="job-1"):
        store.get("job-1")


def test_given_a_dirty_result_when_marked_clean_then_it_is_clean_and_no_longer_listed_dirty(
    store: JobResultStore, leader: Contender
) -> None:
    store.create_dirty(leader.fence, _failed("job-1", leader.leadership.epoch))
    store.create_dirty(leader.fence, _finished("job-2", leader.leadership.epoch))
    # The CLEAN time is the index node's mtime: ZooKeeper keeps milliseconds.
    before = int(time.time() * 1000) / 1000.0

    clean = store.mark_clean(leader.fence, "job-1")

    assert clean.status is CleanupStatus.CLEAN
    assert clean.cleaned_at is not None
    assert before <= clean.cleaned_at <= time.time()
    assert store.get("job-1") == clean
    assert clean.model_copy(update={"status": CleanupStatus.DIRTY, "cleaned_at": None}) == (
        _failed("job-1", leader.leadership.epoch)
    )
    assert [entry.job_id for entry in store.list_dirty()] == ["job-2"]
    assert sorted(entry.job_id for entry in store.entries()) == ["job-1", "job-2"]


def test_given_a_clean_result_when_marked_clean_again_then_nothing_changes(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    store.create_dirty(leader.fence, _finished("job-1", leader.leadership.epoch))
    first = store.mark_clean(leader.fence, "job-1")
    _data, stat_before = session.client.get(session.layout.result("job-1"))

    again = store.mark_clean(leader.fence, "job-1")

    assert again == first
    _data, stat_after = session.client.get(session.layout.result("job-1"))
    assert stat_after.version == stat_before.version


def test_given_no_result_when_marked_clean_then_job_not_found(
    store: JobResultStore, leader: Contender
) -> None:
    with pytest.raises(JobNotFoundError, match="job-1"):
        store.mark_clean(leader.fence, "job-1")


def test_given_a_result_when_created_again_then_job_exists_and_the_first_stays(
    store: JobResultStore, leader: Contender
) -> None:
    first = _failed("job-1", leader.leadership.epoch)
    store.create_dirty(leader.fence, first)

    with pytest.raises(JobExistsError, match="job-1"):
        store.create_dirty(leader.fence, _finished("job-1", leader.leadership.epoch))

    assert store.get("job-1") == first


def test_given_a_clean_entry_when_created_then_value_error_and_nothing_is_stored(
    store: JobResultStore, leader: Contender
) -> None:
    entry = _finished("job-1", leader.leadership.epoch).model_copy(
        update={"status": CleanupStatus.CLEAN}
    )

    with pytest.raises(ValueError, match="DIRTY"):
        store.create_dirty(leader.fence, entry)

    assert store.find("job-1") is None


def test_given_a_result_when_the_job_graph_is_removed_and_leadership_changes_then_it_is_readable(
    store: JobResultStore,
    leader: Contender,
    depose: Callable[[], Contender],
    blobs: BlobStore,
) -> None:
    graphs = JobGraphStore(leader.session, blobs)
    graphs.put(leader.fence, make_graph("job-1"))
    entry = _finished("job-1", leader.leadership.epoch, value=[1, 2, 3])
    store.create_dirty(leader.fence, entry)
    assert graphs.remove(leader.fence, "job-1")
    assert store.get("job-1") == entry

    new_leader = depose()
    leader.session.close()

    new = JobResultStore(new_leader.session, blobs)
    assert new.get("job-1") == entry
    assert [dirty.job_id for dirty in new.list_dirty()] == ["job-1"]
    assert JobGraphStore(new_leader.session, blobs).job_ids() == []
    # The new leader finishes the cleanup its predecessor left.
    assert new.mark_clean(new_leader.fence, "job-1").status is CleanupStatus.CLEAN
    assert new.list_dirty() == []


def test_given_a_result_larger_than_the_limit_when_created_then_it_is_refused_and_nothing_stored(
    store: JobResultStore, leader: Contender
) -> None:
    entry = _finished("job-1", leader.leadership.epoch, value="x" * MAX_ENTRY_BYTES)

    with pytest.raises(ResultTooLargeError, match=f"limit is {MAX_ENTRY_BYTES}"):
        store.create_dirty(leader.fence, entry)

    assert store.find("job-1") is None
    assert store.job_ids() == []


def test_given_a_result_just_under_the_limit_when_created_then_it_is_stored(
    store: JobResultStore, leader: Contender
) -> None:
    small = _finished("job-1", leader.leadership.epoch, value="")
    padding = MAX_ENTRY_BYTES - len(small.to_json())
    # Same timestamps as `small`: a fresh time.time() could print with fewer digits.
    entry = small.model_copy(update={"value": "x" * padding})
    assert len(entry.to_json()) == MAX_ENTRY_BYTES

    store.create_dirty(leader.fence, entry)

    assert store.get("job-1") == entry


def test_given_a_corrupt_entry_when_listing_then_it_is_skipped_and_the_others_are_listed(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    good = _finished("job-1", leader.leadership.epoch)
    store.create_dirty(leader.fence, good)
    session.client.create(session.layout.result("job-2"), b"\x00not json")
    session.client.create(session.layout.result("job-3"), b'{"schema": 1, "job_id": "job-3"}')

    assert store.entries() == [good]
    assert store.list_dirty() == [good]
    assert store.job_ids() == ["job-1", "job-2", "job-3"]
    with pytest.raises(CorruptStateError, match="job result"):
        store.find("job-2")
    # A corrupt entry still blocks the job from being started again.
    assert store.has_result("job-2")
