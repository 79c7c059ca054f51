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

from steward.errors import NodeExistsError
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.store.counters import FencedCounter
from steward.wire.livy import MAX_BATCH_ID


class BatchIdCounter:
    """The cluster's Livy batch ids, from 0 as Livy's."""

    def __init__(self, session: Session) -> None:
        self._client = session.client
        path = session.layout.batch_counter
        self._parent = path.rsplit("/", 1)[0]
        self._counter = FencedCounter(
            self._client,
            path,
            name="livy/batch-counter",
            first=0,
            last=MAX_BATCH_ID,
            ensure_parent=self._ensure_parent,
        )

    def next(self, fence: Fence) -> int:
        """Hand out the next id; FencedError if this leader was deposed, CorruptStateError if
        the counter does not decode or is exhausted."""
        return self._counter.get_and_increment(fence)

    def _ensure_parent(self, fence: Fence) -> None:
        if zk.read(self._client, self._parent) is None:
            with contextlib.suppress(NodeExistsError):
                fence.transaction().create(self._parent, b"").commit()
