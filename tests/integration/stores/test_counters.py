"""The fenced counter both of Steward's counters are (``store/counters.py``), in a real
ZooKeeper: every value once, in order, under concurrent callers; none for a stale fence; a
corrupt or exhausted znode reported, never repaired."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from stores_support import Contender

from steward.errors import CorruptStateError, FencedError
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store.counters import FencedCounter

pytestmark = pytest.mark.zookeeper


def _counter(session: Session, *, first: int = 5, last: int = 1000) -> FencedCounter:
    # The session's root exists, so the counter needs nothing made above it.
    path = f"{session.layout.root}/test-counter"
    return FencedCounter(session.client, path, name="test-counter", first=first, last=last)


def test_two_concurrent_incrementers_never_get_the_same_value(
    session: Session, leader: Contender
) -> None:
    drawn: list[list[int]] = [[], []]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def draw(into: list[int]) -> None:
        counter = _counter(session)
        start.wait()
        try:
            into.extend(counter.get_and_increment(leader.fence) for _ in range(40))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(drawn[0] + drawn[1]) == list(range(5, 85))
    assert all(values == sorted(values) for values in drawn)


def test_a_stale_fence_is_refused_and_moves_nothing(
    leader: Contender, depose: Callable[[], Contender]
) -> None:
    counter = _counter(leader.session)
    assert counter.get_and_increment(leader.fence) == 5
    successor = depose()
    with pytest.raises(FencedError):
        counter.get_and_increment(leader.fence)
    assert counter.peek() == 6
    assert _counter(successor.session).get_and_increment(successor.fence) == 6


def test_the_parent_is_made_before_the_first_value(session: Session, leader: Contender) -> None:
    made: list[str] = []
    path = f"{session.layout.root}/counters/test-counter"

    def ensure_parent(fence: Fence) -> None:
        fence.transaction().create(f"{session.layout.root}/counters", b"").commit()
        made.append("parent")

    counter = FencedCounter(
        session.client, path, name="c", first=0, last=9, ensure_parent=ensure_parent
    )
    assert [counter.get_and_increment(leader.fence) for _ in range(3)] == [0, 1, 2]
    assert made == ["parent"]


def test_an_exhausted_counter_is_reported_not_wrapped(session: Session, leader: Contender) -> None:
    counter = _counter(session, first=0, last=1)
    assert [counter.get_and_increment(leader.fence) for _ in range(2)] == [0, 1]
    with pytest.raises(CorruptStateError, match="test-counter out of range: 2"):
        counter.get_and_increment(leader.fence)
    assert session.client.get(counter.path)[0] == b"2"
