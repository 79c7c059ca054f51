"""Restart strategies: how many restarts a job gets, and how long it waits before each."""

from __future__ import annotations

import pytest

from steward.jobmanager.leader.restart import restart_delay, restarts_allowed
from steward.wire.jobs import ExponentialDelayRestart, FixedDelayRestart, NoRestart


def test_no_restart_allows_none() -> None:
    strategy = NoRestart()
    assert restarts_allowed(strategy) == 0
    assert restart_delay(strategy, 1) is None
    assert restart_delay(strategy, 5) is None


def test_no_failure_yet_means_no_delay() -> None:
    for strategy in (NoRestart(), FixedDelayRestart(), ExponentialDelayRestart()):
        assert restart_delay(strategy, 0) == 0.0


def test_fixed_delay_waits_the_same_until_the_budget_is_spent() -> None:
    strategy = FixedDelayRestart(attempts=3, delay=2.5)
    assert restarts_allowed(strategy) == 3
    assert [restart_delay(strategy, n) for n in (1, 2, 3)] == [2.5, 2.5, 2.5]
    assert restart_delay(strategy, 4) is None
    assert restart_delay(strategy, 100) is None


def test_fixed_delay_with_zero_attempts_gives_up_at_once() -> None:
    strategy = FixedDelayRestart(attempts=0, delay=1.0)
    assert restarts_allowed(strategy) == 0
    assert restart_delay(strategy, 1) is None


def test_exponential_delay_doubles_and_is_capped_at_max() -> None:
    strategy = ExponentialDelayRestart(initial=1.0, max=5.0, multiplier=2.0, max_attempts=6)
    assert restarts_allowed(strategy) == 6
    delays = [restart_delay(strategy, n) for n in range(1, 7)]
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert restart_delay(strategy, 7) is None


def test_exponential_delay_with_another_multiplier() -> None:
    strategy = ExponentialDelayRestart(initial=0.5, max=60.0, multiplier=3.0, max_attempts=4)
    assert [restart_delay(strategy, n) for n in range(1, 5)] == pytest.approx([0.5, 1.5, 4.5, 13.5])
    assert restart_delay(strategy, 5) is None


def test_exponential_delay_with_multiplier_one_is_constant() -> None:
    strategy = ExponentialDelayRestart(initial=3.0, max=10.0, multiplier=1.0, max_attempts=3)
    assert [restart_delay(strategy, n) for n in range(1, 4)] == [3.0, 3.0, 3.0]


def test_exponential_delay_max_attempts_zero_gives_up_at_once() -> None:
    strategy = ExponentialDelayRestart(max_attempts=0)
    assert restarts_allowed(strategy) == 0
    assert restart_delay(strategy, 1) is None


def test_exponential_delay_does_not_overflow_for_huge_failure_counts() -> None:
    strategy = ExponentialDelayRestart(initial=1.0, max=60.0, multiplier=2.0, max_attempts=5000)
    assert restart_delay(strategy, 4000) == 60.0


def test_defaults_match_the_documented_strategy() -> None:
    default = ExponentialDelayRestart()
    assert restarts_allowed(default) == 10
    assert restart_delay(default, 1) == 1.0
    assert restart_delay(default, 10) == 60.0
    assert restart_delay(default, 11) is None
