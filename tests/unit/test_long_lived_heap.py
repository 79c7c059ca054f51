"""The collector policy of a long-running process (steward.long_lived_heap), on the real
collector: what survived a full collection is frozen, a young collection freezes nothing,
everything is handed back on schedule, and a cycle of garbage among frozen objects is freed
once it has been."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from steward.long_lived_heap import LongLivedHeap
from steward.testing.waiting import wait_until


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def only_asked_collections() -> Iterator[None]:
    """No automatic collection during a test: only the ones it asks for run, so what the
    policy's thread is woken for is known (collections made explicitly still call back)."""
    enabled = gc.isenabled()
    gc.disable()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


@pytest.fixture
def heap() -> Iterator[LongLivedHeap]:
    heap = LongLivedHeap().start()
    yield heap
    heap.stop()


def _scanned(obj: object) -> bool:
    """Whether a collection scans ``obj`` (a frozen object is in no generation)."""
    return any(o is obj for o in gc.get_objects())


def _frozen_after(collect: int) -> None:
    """Collect generation ``collect`` and wait for the policy's thread to freeze what survived
    (a marker made here survives, so the freeze count grows); the thread is then idle."""
    before = gc.get_freeze_count()
    marker = [Node()]
    gc.collect(collect)
    wait_until(lambda: gc.get_freeze_count() > before, 5.0, "a freeze")
    assert marker


def test_what_survives_a_full_collection_is_left_out_of_the_next_ones(
    heap: LongLivedHeap,
) -> None:
    kept = [Node()]  # made after the start's freeze: scanned until a full collection
    assert _scanned(kept)

    _frozen_after(2)

    assert not _scanned(kept)


def test_a_young_collection_freezes_nothing(heap: LongLivedHeap) -> None:
    fresh = [Node()]

    gc.collect(0)
    gc.collect(1)

    assert not heap._collected.is_set()  # the thread is not woken for them
    assert _scanned(fresh)


def test_every_interval_the_frozen_objects_go_back_and_their_garbage_cycles_are_freed() -> None:
    now = [0.0]
    heap = LongLivedHeap(unfreeze_every=60.0, clock=lambda: now[0]).start()
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        gone = weakref.ref(a)
        _frozen_after(2)
        del a, b
        _frozen_after(2)  # the cycle is garbage now, but frozen
        assert gone() is not None  # frozen: no collection looks at it

        now[0] = 61.0
        heap._collected.set()  # wake the thread now rather than at its next timeout
        wait_until(lambda: gc.get_freeze_count() == 0, 5.0, "the frozen objects handed back")
        gc.collect()

        assert gone() is None
    finally:
        heap.stop()


def test_once_stopped_a_full_collection_freezes_nothing() -> None:
    heap = LongLivedHeap().start()
    heap.stop()
    gc.unfreeze()
    kept = [Node()]

    gc.collect()

    assert heap._on_collection not in gc.callbacks
    assert gc.get_freeze_count() == 0
    assert _scanned(kept)
