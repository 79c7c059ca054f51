"""Waiting for a condition with a deadline: the one poll loop of tests, chaos and benchmarks.

Nothing here sleeps as synchronisation: :func:`wait_until` polls a predicate and returns the
first truthy value it gives, or raises :class:`WaitTimeoutError` once the deadline has passed.
:class:`WaitTimeoutError` is both an ``AssertionError`` (a test fails with the message and the last
value) and a ``TimeoutError`` (what a benchmark or a Spark helper catches).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_INTERVAL = 0.02


class WaitTimeoutError(AssertionError, TimeoutError):
    """A condition did not become true within its timeout."""


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float,
    message: str = "",
    interval: float = DEFAULT_INTERVAL,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises :class:`WaitTimeoutError` (naming ``message``, else the predicate, and its last value)
    once ``timeout`` seconds have passed; the predicate runs at least once. Exceptions from the
    predicate propagate: catch them inside it if they are expected. Between two calls it sleeps
    ``interval``, never past the deadline.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            what = message or getattr(predicate, "__name__", "condition")
            raise WaitTimeoutError(f"{what}: not true within {timeout:g}s (last value: {value!r})")
        time.sleep(min(interval, remaining))
