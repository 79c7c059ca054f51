"""Seed 002's two interleavings through the stores' public API, with the old leader deposed the
way seed 002 describes: its ZooKeeper session is lost while a standby is granted, and its
process carries on with the store objects it already had, now on a new session.

(tests/integration/stores/test_store_fencing.py covers the same interleavings, and more, with
a leader deposed by a graceful stop.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ha_harness import SESSION_TIMEOUT, expire_session

from integration.stores.stores_support import make_graph
from steward.errors import FencedError
from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.checkpoints import CheckpointIDCounter
from steward.store.job_graphs import JobGraphStore
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOB = "job-i"


class JobManager:
    """A contender with its session, its election and the terms it was granted."""

    def __init__(self, name: str, quorum: str, root: str) -> None:
        self.session = Session(quorum, root, session_timeout=SESSION_TIMEOUT, name=name).start()
        self.terms: list[Leadership] = []
        self.election = LeaderElection(
            self.session, name, f"http://{name}:8081", on_granted=self.terms.append
        ).start()

    def term(self) -> Leadership:
        latest: Leadership = wait_until(
            lambda: self.terms and self.terms[-1], 10, message="granted"
        )
        return latest

    def close(self) -> None:
        self.election.stop()
        self.session.close()


@pytest.fixture
def managers(zk_quorum: str, cluster_id: str) -> Iterator[tuple[JobManager, JobManager]]:
    """JM1 leading, JM2 standing by."""
    root = f"/steward-tests/{cluster_id}"
    jm1 = JobManager("jm-1", zk_quorum, root)
    jm1.term()
    jm2 = JobManager("jm-2", zk_quorum, root)
    yield jm1, jm2
    jm2.close()
    jm1.close()


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(f"file://{tmp_path}/blobs")


def depose_by_session_loss(jm1: JobManager, jm2: JobManager) -> tuple[Leadership, Leadership]:
    """Expire JM1's session; once JM2 is granted and JM1 is back on a new session, return
    JM1's old term and JM2's term."""
    old = jm1.term()
    old_session = jm1.session.session_id
    expire_session(jm1.session)
    new = jm2.term()
    wait_until(
        lambda: jm1.session.connected and jm1.session.session_id not in (None, old_session),
        10,
        message="jm-1 back on a new session",
    )
    assert new.epoch > old.epoch
    return old, new


def test_seed002_old_leader_cannot_remove_the_job_graph_the_new_leader_re_added(
    managers: tuple[JobManager, JobManager], blobs: BlobStore
) -> None:
    # Given JM1 leads and job i's graph is stored
    jm1, jm2 = managers
    old_store = JobGraphStore(jm1.session, blobs)
    old_store.put(jm1.term().fence, make_graph(JOB, "def main(ctx):\n    return 1\n"))
    # When JM1's session is lost and JM2 is granted,
    old, new = depose_by_session_loss(jm1, jm2)
    # JM2 re-adds job i (removes it and submits it again under its own epoch),
    new_store = JobGraphStore(jm2.session, blobs)
    resubmitted = make_graph(JOB, "def main(ctx):\n    return 'again'\n")
    assert new_store.remove(new.fence, JOB)
    new_store.put(new.fence, resubmitted)
    pointer = new_store.pointer(JOB)
    # and JM1, still holding its store, removes job i because it saw it finish
    with pytest.raises(FencedError):
        old_store.remove(old.fence, JOB)
    # Then job i's graph is JM2's, whole: its pointer, its epoch and its blob
    assert new_store.pointer(JOB) == pointer
    assert pointer.epoch == new.epoch
    assert new_store.get(JOB) == resubmitted
    assert JobGraphStore(jm1.session, blobs).get(JOB) == resubmitted


def test_seed002_old_leader_cannot_advance_the_checkpoint_counter(
    managers: tuple[JobManager, JobManager],
) -> None:
    # Given JM1 leads and handed out checkpoint ids 1 and 2
    jm1, jm2 = managers
    old_counter = CheckpointIDCounter(jm1.session, JOB)
    assert [old_counter.get_and_increment(jm1.term().fence) for _ in range(2)] == [1, 2]
    # When JM1's session is lost, JM2 is granted and hands out id 3
    old, new = depose_by_session_loss(jm1, jm2)
    new_counter = CheckpointIDCounter(jm2.session, JOB)
    assert new_counter.get_and_increment(new.fence) == 3
    # And JM1, still holding its counter, takes the next id or resets the counter
    with pytest.raises(FencedError):
        old_counter.get_and_increment(old.fence)
    with pytest.raises(FencedError):
        old_counter.set(old.fence, 1)
    # Then the counter is where JM2 left it, for both
    assert new_counter.get() == 4
    assert old_counter.get() == 4
