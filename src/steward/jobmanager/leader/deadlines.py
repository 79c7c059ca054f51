"""The live jobs' deadlines (``timeout`` in their specs): one heap for the whole leader.

No thread or timer per job: the scheduler's pass (every ``TICK``) asks :meth:`Deadlines.due`
for the jobs whose deadline has passed, at a cost of O(log n) per job due and nothing for
the others. A job's deadline is ``submitted_at + timeout``, both stored with the job, so a
new leader rebuilds this heap during recovery and enforces the same deadlines.

A job that ends before its deadline is dropped from the index at once (:meth:`discard`); its
heap entry is left behind and skipped when it comes up, and the heap is rebuilt when such
entries outnumber the live ones, so its size stays within twice the live jobs with a
timeout. Called under the job table's lock.
"""

from __future__ import annotations

import heapq

_COMPACT_FLOOR = 64
"""Below this many heap entries stale ones are left for :meth:`Deadlines.due` to skip."""


class Deadlines:
    """Job ids by deadline (wall-clock seconds), earliest first."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []
        self._by_job: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._by_job)

    def add(self, job_id: str, at: float) -> None:
        """The job is to be cancelled at ``at`` (replaces a deadline it had)."""
        self._by_job[job_id] = at
        heapq.heappush(self._heap, (at, job_id))
        self._compact_if_stale()

    def discard(self, job_id: str) -> None:
        """The job ended (or is no longer this leader's): it has no deadline any more."""
        if self._by_job.pop(job_id, None) is not None:
            self._compact_if_stale()

    def due(self, now: float) -> list[str]:
        """The jobs whose deadline is ``now`` or earlier, earliest first; each is removed."""
        found: list[str] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, job_id = heapq.heappop(heap)
            if self._by_job.get(job_id) == at:
                del self._by_job[job_id]
                found.append(job_id)
        return found

    def _compact_if_stale(self) -> None:
        if len(self._heap) > max(_COMPACT_FLOOR, 2 * len(self._by_job)):
            self._heap = [(at, job_id) for job_id, at in self._by_job.items()]
            heapq.heapify(self._heap)
