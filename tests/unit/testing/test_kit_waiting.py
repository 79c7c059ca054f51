"""The testing kit's wait_until: the first truthy value, a deadline that holds, the failure."""

from __future__ import annotations

import time

import pytest

from steward.testing.waiting import WaitTimeoutError, wait_until


def test_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "found", "later"])

    assert wait_until(lambda: next(values), 5.0, interval=0.001) == "found"


def test_fails_after_the_deadline_naming_the_wait_and_the_last_value() -> None:
    calls: list[float] = []

    def never() -> int:
        calls.append(time.monotonic())
        return 0

    started = time.monotonic()
    expected = r"the thing: not true within 0.2s \(last value: 0\)"
    with pytest.raises(WaitTimeoutError, match=expected):
        wait_until(never, 0.2, "the thing", interval=0.05)
    elapsed = time.monotonic() - started

    assert 0.2 <= elapsed < 1.0
    assert 2 <= len(calls) <= 10


def test_the_failure_is_an_assertion_for_tests_and_a_timeout_for_benchmarks() -> None:
    with pytest.raises(AssertionError):
        wait_until(lambda: False, 0.0)
    with pytest.raises(TimeoutError, match="never"):
        wait_until(lambda: None, 0.0, "never")


def test_the_predicate_runs_once_even_with_no_time_left() -> None:
    assert wait_until(lambda: 1, 0.0) == 1


def test_it_never_sleeps_past_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError):
        wait_until(lambda: False, 0.1, interval=5.0)

    assert time.monotonic() - started < 1.0


def test_exceptions_of_the_predicate_propagate() -> None:
    def broken() -> bool:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        wait_until(broken, 1.0)
