"""Restart strategies: after a job's ``failures``-th failed attempt, restart it, and when.

Pure functions of the spec's strategy: the JobMaster counts failures, this module decides.
"""

from __future__ import annotations

import math

from steward.wire.jobs import ExponentialDelayRestart, FixedDelayRestart, NoRestart


def restarts_allowed(strategy: NoRestart | FixedDelayRestart | ExponentialDelayRestart) -> int:
    """How many failed attempts may be followed by another attempt."""
    if isinstance(strategy, NoRestart):
        return 0
    if isinstance(strategy, FixedDelayRestart):
        return strategy.attempts
    return strategy.max_attempts


def restart_delay(
    strategy: NoRestart | FixedDelayRestart | ExponentialDelayRestart, failures: int
) -> float | None:
    """Seconds to wait before the next attempt after ``failures`` failures; None: give up."""
    if failures < 1:
        return 0.0
    if failures > restarts_allowed(strategy):
        return None
    if isinstance(strategy, FixedDelayRestart):
        return strategy.delay
    if isinstance(strategy, ExponentialDelayRestart):
        # Compared in log space: multiplier ** 1025 overflows a float long before a job with
        # a large max_attempts would run out of restarts.
        exponent = (failures - 1) * math.log(strategy.multiplier)
        if exponent >= math.log(strategy.max / strategy.initial):
            return strategy.max
        return min(strategy.max, strategy.initial * math.exp(exponent))
    return None  # NoRestart allows none: unreachable after the check above
