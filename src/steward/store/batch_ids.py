"""``livy/batch-counter``: the integer ids of Livy batches, handed out once each.

A Livy client names a batch by an integer; Steward names jobs by strings. Each ``POST
/batches`` takes the next integer ``n`` from this counter and submits job ``livy-<n>``
(:func:`steward.wire.livy.batch_job_id`), so a batch id names the same job on every
JobManager and after any failover, with nothing to look up. The counter only moves forward,
by a fenced compare-and-set (rule 2): two leaders never hand out one id, and an id whose
job's result a retention policy removed is never given to another batch. One znode for the
whole cluster.
"""

from __future__ import annotations

import contextlib
import random
import time

from steward.errors import ConcurrentModificationError, CorruptStateError, NodeExistsError
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.wire.livy import MAX_BATCH_ID

_CAS_DEADLINE = 10.0
_CAS_MAX_PAUSE = 0.05


class BatchIdCounter:
    """The cluster's Livy batch ids, from 0 as Livy's."""

    def __init__(self, session: Session) -> None:
        self._client = session.client
        self._path = session.layout.batch_counter
        self._parent = self._path.rsplit("/", 1)[0]

    def next(self, fence: Fence) -> int:
        """Hand out the next id; FencedError if this leader was deposed, CorruptStateError if
        the counter does not decode or is exhausted."""
        deadline = time.monotonic() + _CAS_DEADLINE
        attempt = 0
        while True:
            attempt += 1
            current = zk.read(self._client, self._path)
            try:
                if current is None:
                    self._create(fence)
                    return 0
                value = _decode(current[0])
                fence.transaction().set_data(
                    self._path, str(value + 1).encode(), current[1].version
                ).commit()
                return value
            except (ConcurrentModificationError, NodeExistsError):
                if time.monotonic() >= deadline:
                    raise ConcurrentModificationError(
                        "the batch id counter kept changing"
                    ) from None
                time.sleep(random.uniform(0, min(_CAS_MAX_PAUSE, 0.001 * 2 ** min(attempt, 8))))

    def _create(self, fence: Fence) -> None:
        """The counter, holding 1 (0 is handed out); NodeExistsError if another made it."""
        if zk.read(self._client, self._parent) is None:
            with contextlib.suppress(NodeExistsError):
                fence.transaction().create(self._parent, b"").commit()
        fence.transaction().create(self._path, b"1").commit()


def _decode(data: bytes) -> int:
    try:
        value = int(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptStateError(f"livy/batch-counter: {data[:40]!r}") from exc
    if not 0 <= value <= MAX_BATCH_ID:
        raise CorruptStateError(f"livy/batch-counter out of range: {value}")
    return value
