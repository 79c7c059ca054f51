"""Rate limits under a flood of distinct addresses (issue 27 part 4): memory stays bounded and
a refused guess stays cheap.

A flood of failed authentications, each from a new IPv4 address with a new guessed token (what
an attacker with many addresses sends), goes through :class:`steward.security.rate_limits.
RateLimiter` as the middleware drives it (``refused`` then ``failed``), and, as the baseline in
the same run, through the same ``limits`` strategy over ``limits``' own ``MemoryStorage``. For
each: the counters held at the end, the memory they take (tracemalloc, a separate pass), and
the time per request. No ZooKeeper and no server: this is the limiter's own cost.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from _common import Json, machine, parser, progress, run_main, source, summary_row
from steward.config import RateLimitSettings
from steward.security.rate_limits import MAX_KEYS, RateLimiter, credential_key

SETTINGS = RateLimitSettings(
    auth_failures_per_address=30,
    auth_failures_per_credential=10,
    auth_failure_window=300.0,
    submissions_per_team=2000,
    submission_window=600.0,
)
Flood = Callable[[int, int], int]
"""Sends ``n`` failed requests (bounded to ``max_keys`` counters where it can); returns the
counters held after."""


def address(n: int) -> str:
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def steward_flood(n: int, max_keys: int) -> int:
    limiter = RateLimiter(SETTINGS, max_keys=max_keys)
    for i in range(n):
        where, guess = address(i), f"stw_0123456789ab_{i:020d}"
        if limiter.refused(where, guess) is None:
            limiter.failed(where, guess)
    return len(limiter.failure_storage)


def baseline_flood(n: int, _max_keys: int) -> int:
    """The same checks with limits' MemoryStorage (unbounded, expired by its timer thread)."""
    storage = MemoryStorage()
    strategy = SlidingWindowCounterRateLimiter(storage)
    per_address = RateLimitItemPerSecond(30, 300)
    per_credential = RateLimitItemPerSecond(10, 300)
    for i in range(n):
        keys = ((per_address, address(i)), (per_credential, credential_key(f"g{i}")))
        if all(strategy.test(item, key) for item, key in keys):
            for item, key in keys:
                strategy.hit(item, key)
    held = len(storage.storage)
    storage.reset()
    return held


def measured(flood: Flood, n: int, max_keys: int) -> Json:
    gc.collect()
    started = time.perf_counter()
    held = flood(n, max_keys)
    seconds = time.perf_counter() - started
    gc.collect()
    tracemalloc.start()
    peak_held = _retained(flood, n, max_keys)
    tracemalloc.stop()
    return {
        "requests": n,
        "counters_held": held,
        "microseconds_per_request": round(seconds / n * 1e6, 2),
        "retained_bytes": peak_held,
        "bytes_per_request": round(peak_held / n, 1),
    }


def _retained(flood: Flood, n: int, max_keys: int) -> int:
    """Peak traced memory while flooding: what the counters take at their largest."""
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    flood(n, max_keys)
    _, peak = tracemalloc.get_traced_memory()
    return peak - before


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--requests", type=int, default=100_000)
    cli.add_argument("--max-keys", type=int, default=MAX_KEYS)
    args = cli.parse_args()
    # Quick: a bound small enough that the flood goes past it.
    n, max_keys = (10_000, 5_000) if args.quick else (args.requests, args.max_keys)

    def body() -> Json:
        progress(f"flood of {n} distinct addresses: steward's bounded storage")
        ours = measured(steward_flood, n, max_keys)
        progress(f"flood of {n} distinct addresses: limits' MemoryStorage")
        theirs = measured(baseline_flood, n, max_keys)
        return {
            "benchmark": "rate_limit_flood",
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "parameters": {"requests": n, "max_keys": max_keys},
            "results": {"steward": ours, "limits_memory_storage": theirs},
            "summary": _rows(ours, theirs, max_keys),
            "environment": machine(),
            "steward": source(),
        }

    return run_main(body, args.verbose)


def _rows(ours: Json, theirs: Json, max_keys: int) -> list[Json]:
    bound = max_keys * 400
    return [
        summary_row(
            "memory of the failure counters at their largest",
            ours["retained_bytes"] / 2**20,
            "MiB",
            peer=theirs["retained_bytes"] / 2**20,
            goal=f"bounded: at most {max_keys} counters, 400 bytes each",
            met=ours["counters_held"] <= max_keys and ours["retained_bytes"] <= bound,
            note=f"{ours['counters_held']} counters held, limits' own storage"
            f" {theirs['counters_held']}",
        ),
        summary_row(
            "time per refused guess (refused + failed)",
            ours["microseconds_per_request"],
            "us",
            peer=theirs["microseconds_per_request"],
            goal="no dearer than limits' own storage (ratio <= 1.5)",
            met=ours["microseconds_per_request"] <= 1.5 * theirs["microseconds_per_request"],
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
