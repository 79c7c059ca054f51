"""The cyclic collector is off while a recovery chunk is adopted, and back as it was after:
on an error too, never turned on when someone else had turned it off, and on again after
two pauses that overlap."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from steward.jobmanager.leader.collections_paused import collections_paused


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
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
