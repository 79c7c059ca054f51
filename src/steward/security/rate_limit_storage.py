"""Where the rate limits keep their counters: :mod:`limits`' sliding-window-counter storage, in
memory, holding at most ``max_keys`` counters.

``limits``' own MemoryStorage would serve, but not under a flood: it keeps every key it ever
saw until a timer thread, run 100 times a second while hits arrive, walks all of them. A flood
of failures from distinct addresses (IPv6 gives an attacker millions) would grow it without
bound and make each walk longer (and that walk races the requests' own expiry: under
benchmarks/rate_limit_flood.py's flood it died of a KeyError in limits 5.8). Here every counter
of one storage lives equally long (two windows of its one limit), so the oldest counter is also
the next to expire: they are kept in insertion order, expired from the front as new ones come,
and when ``max_keys`` are live the oldest is dropped (forgetting a counter only lets its key
start afresh: a flood of new keys can make the limits forget, never refuse anyone they would
not have). One lock makes each acquisition atomic; nothing runs in the background.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from math import floor

from limits.storage import Storage
from limits.storage.base import SlidingWindowCounterSupport, TimestampedSlidingWindow


@dataclass(slots=True)
class _Counter:
    count: int
    expires_at: float


class BoundedMemoryStorage(Storage, SlidingWindowCounterSupport, TimestampedSlidingWindow):
    """Counters for :class:`limits.strategies.SlidingWindowCounterRateLimiter`, at most
    ``max_keys`` of them."""

    STORAGE_SCHEME = ["steward-bounded-memory"]  # noqa: RUF012 (limits declares it so)

    def __init__(self, max_keys: int, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.max_keys = max_keys
        self.dropped = 0
        """Live counters forgotten to stay within ``max_keys``."""
        self._clock = clock
        self._counters: OrderedDict[str, _Counter] = OrderedDict()
        self._lock = threading.RLock()
        self._quiet_from = float("-inf")
        """No counter made so far expires later than this."""

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    def __len__(self) -> int:
        return len(self._counters)

    def is_quiet(self) -> bool:
        """True when no counter is live: every one ever made has expired (or none was), so
        nothing counted here can refuse anyone. One clock read, no lock."""
        return self._clock() >= self._quiet_from

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        with self._lock:
            now = self._clock()
            counter = self._live(key, now)
            if counter is None:
                self._make_room(now)
                counter = self._counters[key] = _Counter(0, now + expiry)
                self._quiet_from = max(self._quiet_from, counter.expires_at)
            counter.count += amount
            return counter.count

    def decr(self, key: str, amount: int = 1) -> int:
        with self._lock:
            counter = self._live(key, self._clock())
            if counter is None:
                return 0
            counter.count = max(counter.count - amount, 0)
            return counter.count

    def get(self, key: str) -> int:
        with self._lock:
            counter = self._live(key, self._clock())
            return 0 if counter is None else counter.count

    def get_expiry(self, key: str) -> float:
        with self._lock:
            now = self._clock()
            counter = self._live(key, now)
            return now if counter is None else counter.expires_at

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self._lock:
            count = len(self._counters)
            self._counters.clear()
            return count

    def clear(self, key: str) -> None:
        with self._lock:
            self._counters.pop(key, None)

    def acquire_sliding_window_entry(
        self, key: str, limit: int, expiry: int, amount: int = 1
    ) -> bool:
        """As ``limits``' MemoryStorage, but atomic: counted only if the weighted count of the
        two windows stays within ``limit``."""
        if amount > limit:
            return False
        with self._lock:
            now = self._clock()
            previous, previous_ttl, current, _ = self._sliding(key, expiry, now)
            if floor(previous * previous_ttl / expiry + current) + amount > limit:
                return False
            self.incr(self.sliding_window_keys(key, expiry, now)[1], 2 * expiry, amount)
            return True

    def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        with self._lock:
            return self._sliding(key, expiry, self._clock())

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        with self._lock:
            for window_key in self.sliding_window_keys(key, expiry, self._clock()):
                self._counters.pop(window_key, None)

    def _sliding(self, key: str, expiry: int, now: float) -> tuple[int, float, int, float]:
        """The previous window's count and how long it still overlaps the sliding window, the
        current window's count and how long until it ends (what the strategy weighs)."""
        previous_key, current_key = self.sliding_window_keys(key, expiry, now)
        previous, current = self._count(previous_key, now), self._count(current_key, now)
        previous_ttl = (1 - (((now - expiry) / expiry) % 1)) * expiry if previous else 0.0
        current_ttl = (1 - ((now / expiry) % 1)) * expiry + expiry
        return previous, previous_ttl, current, current_ttl

    def _count(self, key: str, now: float) -> int:
        counter = self._live(key, now)
        return 0 if counter is None else counter.count

    def _live(self, key: str, now: float) -> _Counter | None:
        counter = self._counters.get(key)
        if counter is not None and counter.expires_at <= now:
            del self._counters[key]
            return None
        return counter

    def _make_room(self, now: float) -> None:
        """Expire from the front (the oldest counters), then drop the oldest live ones until a
        new counter fits."""
        while self._counters:
            key, oldest = next(iter(self._counters.items()))
            if oldest.expires_at <= now:
                del self._counters[key]
            elif len(self._counters) >= self.max_keys:
                del self._counters[key]
                self.dropped += 1
            else:
                return
