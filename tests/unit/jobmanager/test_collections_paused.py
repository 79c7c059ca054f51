"""The cyclic collector is off while a recovery chunk is adopted, and back as it was after:
on an error too, never turned on when someone else had turned it off, and on again after
two pauses that overlap. What a pause made is not scanned when the collector comes back:
it is kept aside until the recovery ends, and then handed back to the oldest generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from steward.jobmanager.leader.collections_paused import collections_paused, kept_until_recovered


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def test_no_collection_runs_inside_and_the_collector_is_back_after() -> None:
    gc.enable()
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_back_after_an_error() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collections_paused():
        raise RuntimeError("a chunk failed")
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    with collections_paused():
        pass
    assert not gc.isenabled()


def test_two_overlapping_pauses_leave_the_collector_on() -> None:
    gc.enable()
    first, second = collections_paused(), collections_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first ends before the second
    second.__exit__(None, None, None)
    assert gc.isenabled()


def _generation_of(made: object) -> int | None:
    for generation in range(3):
        if any(found is made for found in gc.get_objects(generation)):
            return generation
    return None


def test_what_a_pause_made_is_in_no_generation_until_the_recovery_ends() -> None:
    gc.enable()
    with kept_until_recovered():
        with collections_paused():
            made: list[object] = []
        gc.collect(0)  # the young collection that follows a chunk: it finds nothing to scan
        assert _generation_of(made) is None
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    assert _generation_of(made) == 2


def test_the_kept_objects_are_handed_back_after_an_error() -> None:
    with pytest.raises(RuntimeError), kept_until_recovered():
        with collections_paused():
            pass
        raise RuntimeError("the recovery failed")
    assert gc.get_freeze_count() == 0
