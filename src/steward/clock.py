"""The clock that safety timeouts are measured on, and how long one wait on it may last.

``time.monotonic`` (CLOCK_MONOTONIC on Linux) stops while the machine is suspended. A
timeout that guards safety (the dead-man's switch, the liveness probe; rule 4) must
count that time: ZooKeeper's servers, on other machines, keep counting the session's
timeout while this host sleeps, so after a long enough suspend the execution leases are gone
and a replacement may run. :func:`now` reads CLOCK_BOOTTIME, which keeps counting through a
suspend, where the platform has it, and falls back to ``time.monotonic`` elsewhere.

Reading the right clock is not enough: the kernel times every blocking wait (``poll``,
``Event.wait``, a condition variable) on CLOCK_MONOTONIC, so a wait started before a suspend
still lasts its whole length after the resume. A safety loop therefore never waits longer
than :func:`slice_of` allows, and re-reads :func:`now` after each wait: a deadline that
passed while the host slept is noticed at most :data:`MAX_WAIT` after the resume.

Only the difference of two readings means anything (the origin is the boot, not the epoch),
and readings of this clock must not be compared with ``time.monotonic`` readings.
"""

from __future__ import annotations

import time

MAX_WAIT = 0.25
"""Longest single wait of a safety loop, in seconds: the lateness, after a resume, of noticing
a deadline that passed during a suspend."""

_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)


def _read_boottime() -> float:
    assert _BOOTTIME is not None
    return time.clock_gettime(_BOOTTIME)


def _usable_boottime() -> bool:
    if _BOOTTIME is None:
        return False
    try:
        time.clock_gettime(_BOOTTIME)
    except OSError:  # a kernel or sandbox without it
        return False
    return True


COUNTS_SUSPEND: bool = _usable_boottime()
"""Whether :func:`now` keeps counting while the machine is suspended (Linux: yes)."""

_read = _read_boottime if COUNTS_SUSPEND else time.monotonic


def now() -> float:
    """Seconds on the safety clock: monotonic, and counting time spent suspended."""
    return _read()


def slice_of(remaining: float) -> float:
    """How long to wait now for something ``remaining`` seconds away: never past it, never
    longer than :data:`MAX_WAIT`, never negative."""
    return max(0.0, min(remaining, MAX_WAIT))
