"""The log archive's retention: the leader deletes archived attempt logs that are too old,
or the oldest ones while all of them take more than their budget.

The leader runs one :class:`LogRetention` per term (a thread of its Dispatcher), a round every
``jobmanager.logs.check-interval``. A round never reads a log and keeps no per-log state: it
lists the archive (:meth:`LogArchive.listing`, a stream) once to add up the logs' sizes by the
ten minutes (:data:`BUCKET`) they were archived in, finds the time before which the older logs
must go for the rest to fit ``jobmanager.logs.max-total-size``, and lists it again to delete
every log older than that or than ``jobmanager.logs.max-age``. Memory is one counter per ten
minutes of archive history (4,320 for 30 days), not one entry per log: a million logs cost two
listings a round, nothing more (``benchmarks/log_retention.py``).

Deleting archived logs touches nothing any job depends on, so a round only confirms, once
before deleting, that this leader's epoch is still current (a deposed leader's round stops);
the copy on the TaskManager, if still there, is unaffected. Temporaries of copies that never
finished (a TaskManager killed mid-copy) are deleted once :data:`PARTIAL_AGE` old.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable

from steward.config.settings import LogArchiveSettings
from steward.errors import StewardError
from steward.ha.fencing import Fence
from steward.store.log_archive import ArchivedLog, LogArchive

log = logging.getLogger(__name__)

BUCKET = 600.0
"""Seconds: logs archived within the same ten minutes are kept or deleted together by size
(coarser: less memory per year of history; finer: closer to the budget)."""
PARTIAL_AGE = 3600.0
"""A temporary older than this is a copy that will never finish."""


class LogRetention:
    """Applies ``jobmanager.logs.*`` to the log archive; see the module docstring.

    Example::

        retention = LogRetention(LogArchive(blobs), settings.log_archive, fence=leadership.fence)
        retention.run(stopped)  # on a thread of its own, until ``stopped`` is set
    """

    def __init__(
        self,
        archive: LogArchive,
        settings: LogArchiveSettings,
        *,
        fence: Fence,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.archive = archive
        self.settings = settings
        self._fence = fence
        self._clock = clock
        self._stopped = threading.Event()

    def run(self, stopped: threading.Event) -> None:
        """A round every check interval until ``stopped``; a failed round is retried later."""
        self._stopped = stopped
        if not (self.settings.max_age or self.settings.max_total_size):
            return  # kept for ever: nothing to do, not even listing
        while not stopped.wait(self.settings.check_interval):
            try:
                self.collect()
            except StewardError as exc:
                log.warning("archived log retention round failed error=%s", exc)

    def collect(self) -> int:
        """One round; returns how many logs it deleted. FencedError once deposed."""
        now = self._clock()
        cutoff = self.cutoff(now)
        self._fence.transaction().commit()  # FencedError: a newer leader applies it now
        deleted = 0
        for entry in self.archive.listing():
            if self._stopped.is_set():
                break
            if _expired(entry, cutoff, now):
                self.archive.delete(entry.key)
                deleted += 1
        if deleted:
            log.info("archived logs deleted count=%d cutoff=%.0f", deleted, cutoff)
        return deleted

    def cutoff(self, now: float) -> float:
        """The time before which archived logs go: by age, and by size when over budget."""
        by_age = now - self.settings.max_age if self.settings.max_age else -math.inf
        if not self.settings.max_total_size:
            return by_age
        sizes: collections.Counter[int] = collections.Counter()
        for entry in self.archive.listing():
            if not entry.partial and entry.modified >= by_age:
                sizes[int(entry.modified // BUCKET)] += entry.size
        return max(by_age, size_cutoff(sizes, self.settings.max_total_size))


def size_cutoff(sizes: collections.Counter[int], budget: int) -> float:
    """The end of the newest bucket (of ``sizes``: bytes by bucket index) that no longer fits
    within ``budget`` with every newer one; -inf when all fit."""
    total = 0
    for bucket in sorted(sizes, reverse=True):
        total += sizes[bucket]
        if total > budget:
            return (bucket + 1) * BUCKET
    return -math.inf


def _expired(entry: ArchivedLog, cutoff: float, now: float) -> bool:
    if entry.partial:
        return entry.modified < now - PARTIAL_AGE
    return entry.modified < cutoff
