"""Livy batch ids (``livy/batch-counter``) in a real ZooKeeper: handed out once each, from 0,
by concurrent callers and across a change of leader; never by a deposed leader."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from stores_support import Contender

from steward.errors import CorruptStateError, FencedError
from steward.ha.session import Session
from steward.store.batch_ids import BatchIdCounter

pytestmark = pytest.mark.zookeeper


def test_ids_start_at_zero_and_go_on_under_the_next_leader(
    leader: Contender, depose: Callable[[], Contender]
) -> None:
    first = BatchIdCounter(leader.session)
    assert [first.next(leader.fence) for _ in range(3)] == [0, 1, 2]
    successor = depose()
    assert BatchIdCounter(successor.session).next(successor.fence) == 3


def test_a_deposed_leader_takes_no_id(leader: Contender, depose: Callable[[], Contender]) -> None:
    counter = BatchIdCounter(leader.session)
    assert counter.next(leader.fence) == 0
    successor = depose()
    with pytest.raises(FencedError):
        counter.next(leader.fence)
    assert BatchIdCounter(successor.session).next(successor.fence) == 1


def test_concurrent_callers_never_get_the_same_id(session: Session, leader: Contender) -> None:
    drawn: list[list[int]] = [[], []]
    start = threading.Barrier(2)

    def draw(into: list[int]) -> None:
        counter = BatchIdCounter(session)
        start.wait()
        for _ in range(30):
            into.append(counter.next(leader.fence))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(drawn[0] + drawn[1]) == list(range(60))


def test_a_corrupt_counter_is_reported_not_repaired(session: Session, leader: Contender) -> None:
    counter = BatchIdCounter(session)
    counter.next(leader.fence)
    session.client.set(session.layout.batch_counter, b"garbage")
    with pytest.raises(CorruptStateError, match="batch-counter"):
        counter.next(leader.fence)
    assert session.client.get(session.layout.batch_counter)[0] == b"garbage"
