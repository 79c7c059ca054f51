"""Fencing through the stores (rule 2; seeds 001 and 002).

A deposed leader whose session is still alive keeps calling the stores. Every one of its
writes must fail with FencedError and leave ZooKeeper and the blob storage exactly as they
were: no znode changed, no blob deleted, and no blob of the failed write left behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from stores_support import Contender, blob_keys, make_graph, znode_snapshot

from steward.errors import FencedError
from steward.ha.session import Session
from steward.store import job_graphs
from steward.store.blob import BlobStore
from steward.store.checkpoints import CheckpointIDCounter, CompletedCheckpointStore
from steward.store.job_graphs import JobGraphStore
from steward.store.results import JobResultStore
from steward.wire.records import CompletedCheckpoint, JobResultEntry
from steward.wire.states import CleanupStatus, TerminalState

pytestmark = pytest.mark.zookeeper

Depose = Callable[[], Contender]


def _state(session: Session, blobs: BlobStore) -> tuple[object, ...]:
    """Everything a store write could change: the stores' znodes and every blob."""
    layout = session.layout
    return (
        znode_snapshot(session, layout.jobgraphs),
        znode_snapshot(session, layout.results),
        znode_snapshot(session, layout.jobs),
        [(info.key, info.modified) for info in blobs.list("jobgraphs")],
        [(info.key, info.modified) for info in blobs.list("checkpoints")],
    )


def _checkpoint(job_id: str, checkpoint_id: int) -> CompletedCheckpoint:
    return CompletedCheckpoint(
        job_id=job_id, checkpoint_id=checkpoint_id, attempt=0, created_at=time.time()
    )


def _result(job_id: str, epoch: int) -> JobResultEntry:
    return JobResultEntry(
        job_id=job_id, state=TerminalState.FINISHED, value=42, finished_at=time.time(), epoch=epoch
    )


# ---------------------------------------------------------------- job graphs


def test_given_a_deposed_leader_when_it_puts_replaces_or_removes_graphs_then_all_are_fenced(
    leader: Contender, depose: Depose, blobs: BlobStore
) -> None:
    old = JobGraphStore(leader.session, blobs)
    kept = make_graph("job-1")
    old.put(leader.fence, kept)
    new_leader = depose()
    before = _state(new_leader.session, blobs)

    with pytest.raises(FencedError):
        old.put(leader.fence, make_graph("job-2"))
    with pytest.raises(FencedError):
        old.replace(leader.fence, make_graph("job-1", code="def main(ctx):\n    return 2\n"))
    with pytest.raises(FencedError):
        old.remove(leader.fence, "job-1")

    assert _state(new_leader.session, blobs) == before
    assert blob_keys(blobs, "jobgraphs/job-2") == []  # the failed put left no blob behind
    new = JobGraphStore(new_leader.session, blobs)
    assert new.job_ids() == ["job-1"]
    assert new.get("job-1") == kept


def test_given_a_deposed_leader_that_read_a_pointer_when_the_new_leader_re_adds_the_job_then_the_old_remove_cannot_delete_it(  # noqa: E501
    leader: Contender, depose: Depose, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seed 002's interleaving: JM 1 reads the pointer of a job it is about to remove, JM 2
    # takes over, removes the job and adds it again, then JM 1's remove goes through.
    old = JobGraphStore(leader.session, blobs)
    old.put(leader.fence, make_graph("job-1"))
    resubmitted = make_graph("job-1", code="def main(ctx):\n    return 'again'\n")
    real_read = job_graphs.zk.read
    interleaved: list[Contender] = []

    def read_then_let_the_new_leader_act(client: object, path: str) -> object:
        current = real_read(client, path)  # type: ignore[arg-type]
        if client is leader.session.client and not interleaved:
            new_leader = depose()
            interleaved.append(new_leader)
            new = JobGraphStore(new_leader.session, blobs)
            assert new.remove(new_leader.fence, "job-1")
            new.put(new_leader.fence, resubmitted)
        return current

    monkeypatch.setattr(job_graphs.zk, "read", read_then_let_the_new_leader_act)

    with pytest.raises(FencedError):
        old.remove(leader.fence, "job-1")

    monkeypatch.undo()
    [new_leader] = interleaved
    new = JobGraphStore(new_leader.session, blobs)
    assert new.get("job-1") == resubmitted
    assert new.pointer("job-1").epoch == new_leader.leadership.epoch
    assert blob_keys(blobs, "jobgraphs") == [new.pointer("job-1").blob]


# ---------------------------------------------------------------- checkpoints


def test_given_a_deposed_leader_when_it_increments_the_checkpoint_counter_then_it_is_fenced(
    leader: Contender, depose: Depose, blobs: BlobStore
) -> None:
    old = CheckpointIDCounter(leader.session, "job-1")
    assert [old.get_and_increment(leader.fence) for _ in range(2)] == [1, 2]
    fresh = CheckpointIDCounter(leader.session, "job-2")  # no counter znode yet
    new_leader = depose()
    before = _state(new_leader.session, blobs)

    with pytest.raises(FencedError):
        old.get_and_increment(leader.fence)
    with pytest.raises(FencedError):
        old.set(leader.fence, 100)
    with pytest.raises(FencedError):
        fresh.get_and_increment(leader.fence)

    assert _state(new_leader.session, blobs) == before
    assert CheckpointIDCounter(new_leader.session, "job-1").get() == 3
    assert CheckpointIDCounter(new_leader.session, "job-1").get_and_increment(new_leader.fence) == 3


def test_given_a_deposed_leader_when_it_adds_a_checkpoint_then_it_is_fenced_and_leaves_no_blob(
    leader: Contender, depose: Depose, blobs: BlobStore
) -> None:
    old = CompletedCheckpointStore(leader.session, blobs, "job-1", retained=1)
    old.add(leader.fence, _checkpoint("job-1", 1))
    first_of_another_job = CompletedCheckpointStore(leader.session, blobs, "job-2", retained=1)
    new_leader = depose()
    before = _state(new_leader.session, blobs)

    # retained=1: a successful add would also have dropped checkpoint 1 and its blob.
    with pytest.raises(FencedError):
        old.add(leader.fence, _checkpoint("job-1", 2))
    with pytest.raises(FencedError):
        first_of_another_job.add(leader.fence, _checkpoint("job-2", 1))
    with pytest.raises(FencedError):
        old.remove_all(leader.fence)

    assert _state(new_leader.session, blobs) == before
    assert blob_keys(blobs, "checkpoints/job-2") == []
    new = CompletedCheckpointStore(new_leader.session, blobs, "job-1", retained=1)
    assert new.checkpoint_ids() == [1]
    assert new.latest().checkpoint == old.get(1)


# ---------------------------------------------------------------- results


def test_given_a_deposed_leader_when_it_writes_results_then_create_and_mark_clean_are_fenced(
    leader: Contender, depose: Depose, blobs: BlobStore
) -> None:
    old = JobResultStore(leader.session, blobs)
    old.create_dirty(leader.fence, _result("job-1", leader.leadership.epoch))
    new_leader = depose()
    before = _state(new_leader.session, blobs)

    with pytest.raises(FencedError):
        old.create_dirty(leader.fence, _result("job-2", leader.leadership.epoch))
    with pytest.raises(FencedError):
        old.mark_clean(leader.fence, "job-1")

    assert _state(new_leader.session, blobs) == before
    new = JobResultStore(new_leader.session, blobs)
    assert new.find("job-2") is None
    assert new.get("job-1").status is CleanupStatus.DIRTY
    assert [entry.job_id for entry in new.list_dirty()] == ["job-1"]
