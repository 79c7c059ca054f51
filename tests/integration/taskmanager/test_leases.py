"""Execution leases (rule 3): at most one attempt of a job holds the lease, only a
current leader's epoch can grant it, and it vanishes with its TaskManager's session."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from steward.errors import FencedError
from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import Session
from steward.store.leases import ExecutionLeases, LeaseHeldError
from steward.wire.records import ExecutionLease
from support import wait_until

pytestmark = pytest.mark.zookeeper

Leases = Callable[..., ExecutionLeases]


def test_two_taskmanagers_race_for_one_lease_exactly_one_wins(
    leader: Leadership, leases: Leases
) -> None:
    tm1, tm2 = leases("tm-1"), leases("tm-2")

    won = tm1.acquire("job-a", attempt=0, epoch=leader.epoch)
    with pytest.raises(LeaseHeldError) as lost:
        tm2.acquire("job-a", attempt=1, epoch=leader.epoch)

    assert won == ExecutionLease(taskmanager="tm-1", attempt=0, epoch=leader.epoch)
    assert lost.value.holder == won
    assert "tm-1" in str(lost.value)
    assert tm2.all() == {"job-a": won}


def test_the_holder_cannot_take_its_lease_twice(leader: Leadership, leases: Leases) -> None:
    tm1 = leases("tm-1")
    first = tm1.acquire("job-a", attempt=0, epoch=leader.epoch)

    with pytest.raises(LeaseHeldError) as again:
        tm1.acquire("job-a", attempt=1, epoch=leader.epoch)

    assert again.value.holder == first


def test_a_stale_epoch_creates_no_lease(
    elect: Callable[[str], tuple[LeaderElection, Leadership]], leases: Leases
) -> None:
    old_election, old = elect("jm-1")
    old_election.stop()
    _new_election, new = elect("jm-2")
    assert new.epoch > old.epoch
    tm1 = leases("tm-1")

    with pytest.raises(FencedError):
        tm1.acquire("job-a", attempt=0, epoch=old.epoch)

    assert tm1.held("job-a") is None
    assert tm1.all() == {}
    assert tm1.acquire("job-a", attempt=0, epoch=new.epoch).epoch == new.epoch


def test_an_epoch_older_than_one_seen_is_refused_without_asking_zookeeper(
    leader: Leadership, leases: Leases
) -> None:
    tm1 = leases("tm-1")

    assert tm1.observe_epoch(leader.epoch + 5)
    assert not tm1.observe_epoch(leader.epoch)
    # The current epoch in ZooKeeper would accept leader.epoch; the TaskManager must not.
    with pytest.raises(FencedError):
        tm1.acquire("job-a", attempt=0, epoch=leader.epoch)
    assert tm1.held("job-a") is None
    assert tm1.newest_epoch == leader.epoch + 5


def test_the_lease_vanishes_with_its_session_and_can_then_be_taken(
    leader: Leadership, leases: Leases, tm_session: Callable[..., Session]
) -> None:
    session1 = tm_session("tm-1")
    tm1, tm2 = leases("tm-1", session1), leases("tm-2")
    tm1.acquire("job-a", attempt=0, epoch=leader.epoch)

    session1.close()

    wait_until(lambda: tm2.held("job-a") is None, timeout=10, message="ephemeral lease gone")
    taken = tm2.acquire("job-a", attempt=1, epoch=leader.epoch)
    assert tm2.held("job-a") == taken


def test_release_deletes_only_our_own_lease_of_that_attempt(
    leader: Leadership, leases: Leases
) -> None:
    tm1, tm2 = leases("tm-1"), leases("tm-2")
    lease = tm1.acquire("job-a", attempt=3, epoch=leader.epoch)

    assert not tm2.release("job-a", attempt=3), "another session's lease"
    assert not tm1.release("job-a", attempt=2), "another attempt's lease"
    assert tm1.held("job-a") == lease

    assert tm1.release("job-a", attempt=3)
    assert tm1.held("job-a") is None
    assert not tm1.release("job-a", attempt=3), "already gone"


def test_all_lists_every_lease_of_the_cluster(leader: Leadership, leases: Leases) -> None:
    tm1, tm2 = leases("tm-1"), leases("tm-2")
    a = tm1.acquire("job-a", attempt=0, epoch=leader.epoch)
    b = tm2.acquire("job-b", attempt=2, epoch=leader.epoch)

    assert tm1.all() == {"job-a": a, "job-b": b}
