"""A fenced counter: one znode holding the next integer, handed out once each.

The counter moves only forward, by a fenced compare-and-set (rule 2): two leaders never
hand out one value, and a deposed leader hands out none. Both of Steward's counters are
this one (:mod:`steward.store.checkpoints`' checkpoint ids, :mod:`steward.store.batch_ids`'
Livy batch ids); they differ only in their first value, their range and what must exist
above the znode before it is created.

    counter = FencedCounter(session.client, path, name="batch-counter", first=0, last=99)
    value = counter.get_and_increment(fence)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from kazoo.client import KazooClient

from steward.errors import ConcurrentModificationError, CorruptStateError, NodeExistsError
from steward.ha.fencing import Fence
from steward.store import zk

# A lost compare-and-set is retried after a random pause (full jitter, growing to at most
# _CAS_MAX_PAUSE) until _CAS_DEADLINE. A fixed 16 immediate retries starved one of two threads
# sharing a session every time: the winner always read the new version first.
_CAS_DEADLINE = 10.0
_CAS_MAX_PAUSE = 0.05


def _nothing_above(fence: Fence) -> None:
    del fence


class FencedCounter:
    """The values ``first`` to ``last`` of the znode ``path``, in order, once each.

    ``ensure_parent(fence)`` makes what the znode needs above it, before its creation; it must
    tolerate a concurrent creator. ``name`` starts every error message about the counter.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        name: str,
        first: int,
        last: int,
        ensure_parent: Callable[[Fence], None] = _nothing_above,
    ) -> None:
        self._client = client
        self.path = path
        self.name = name
        self._first = first
        self._last = last
        self._ensure_parent = ensure_parent

    def peek(self) -> int:
        """The value :meth:`get_and_increment` would hand out next (unfenced read)."""
        current = zk.read(self._client, self.path)
        return self.decode(current[0]) if current else self._first

    def get_and_increment(self, fence: Fence) -> int:
        """Hand out the next value; FencedError if the fence is stale, CorruptStateError if the
        znode does not decode, ConcurrentModificationError if it kept changing to the deadline."""
        deadline = time.monotonic() + _CAS_DEADLINE
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._try_increment(fence)
            except (ConcurrentModificationError, NodeExistsError):
                if time.monotonic() >= deadline:
                    raise ConcurrentModificationError(f"{self.name} kept changing") from None
                time.sleep(random.uniform(0, min(_CAS_MAX_PAUSE, 0.001 * 2 ** min(attempt, 8))))

    def _try_increment(self, fence: Fence) -> int:
        current = zk.read(self._client, self.path)
        if current is None:
            self._ensure_parent(fence)
            fence.transaction().create(self.path, str(self._first + 1).encode()).commit()
            return self._first
        value = self.decode(current[0])
        fence.transaction().set_data(
            self.path, str(value + 1).encode(), current[1].version
        ).commit()
        return value

    def decode(self, data: bytes) -> int:
        """The value a znode's data holds; CorruptStateError if it is not one in range."""
        try:
            value = int(data.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise CorruptStateError(f"{self.name}: {data[:40]!r}") from exc
        if not self._first <= value <= self._last:
            raise CorruptStateError(f"{self.name} out of range: {value}")
        return value
