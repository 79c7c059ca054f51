"""Keeps a :class:`~.job_index.JobIndex` current from the job events this JobManager already
watches (:mod:`.events`): the leader and every standby alike.

A full read of ZooKeeper fills the index once at start, and again only when the event journal
cannot say what it missed (a lost session, or this follower fell further behind than the
journal keeps); meanwhile the old index keeps answering. Between full reads an event
costs nothing read when it carries the job's entry (:attr:`.events.journal.Entry.job`: every
event of :mod:`.events.source` does, built from the record it came from). One that does not
(a test's, or a tool's) costs: nothing read for a change of state within an attempt; one read
of the job when it is new to the index, starts a new attempt, or ends.

A terminated job's entry is final: a late status event never brings it back to life. The
journal's cursor is taken before the full read, so nothing that changes during it is lost
(an event may repeat what the read saw; applying it again changes nothing).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from steward.errors import StewardError
from steward.wire.events import JobEvent
from steward.wire.rest import JobView

from .events.journal import Journal, Replay
from .indexed_job import IndexedJob
from .job_index import JobIndex

log = logging.getLogger(__name__)

RETRY_AFTER = 1.0
"""Seconds between full reads that failed (ZooKeeper unreachable)."""
BATCH_EVERY = 0.05
"""Seconds between two batches of events while they keep coming (a standby's listing trails
its events by at most this much more)."""
IDLE_WAIT = 1.0
"""At most this long between two looks at the journal (a stop is noticed by then)."""


class IndexFollower:
    """Fills ``index`` from ``read_all`` and follows ``journal``; ``read_one`` reads a job."""

    def __init__(
        self,
        index: JobIndex,
        journal: Journal,
        read_all: Callable[[], list[JobView]],
        read_one: Callable[[str], JobView | None],
    ) -> None:
        self.index = index
        self._journal = journal
        self._read_all = read_all
        self._read_one = read_one
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-index", daemon=True)

    def start(self) -> IndexFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        asyncio.run(self._follow())

    async def _follow(self) -> None:
        with self._journal.waiting() as waiter:
            cursor = await self._fill()
            while not self._done:
                replay = self._journal.read(cursor)
                if replay is None:
                    log.info("job index re-reads every job (events were missed)")
                    cursor = await self._fill()
                    continue
                self._apply(replay)
                cursor = replay.cursor
                if replay.entries:
                    # Changes come in bursts: taken a batch at a time, not a thread wake-up
                    # per event, which would compete with kazoo's thread that feeds them.
                    await asyncio.sleep(BATCH_EVERY)
                else:
                    await waiter.wait(IDLE_WAIT)

    @property
    def _done(self) -> bool:
        return self._stopped.is_set() or self._journal.closed

    async def _fill(self) -> str:
        """A full read into the index; returns the journal's cursor from just before it."""
        while not self._done:
            cursor = self._journal.head
            try:
                views = self._read_all()
            except StewardError as exc:
                log.warning("job index cannot read the jobs error=%r", exc)
                await asyncio.sleep(RETRY_AFTER)
                continue
            self.index.replace_all(IndexedJob.of(view) for view in views)
            log.info("job index filled jobs=%d", len(self.index))
            return cursor
        return self._journal.head

    def _apply(self, replay: Replay) -> None:
        for entry in replay.entries:
            try:
                self.apply(entry.event, entry.job)
            except StewardError as exc:
                log.warning("job index missed a change job=%s error=%r", entry.event.job_id, exc)

    def apply(self, event: JobEvent, job: IndexedJob | None = None) -> None:
        """Bring the event's job up to date in the index (``job``: as the event's record
        shows it, so nothing is read)."""
        known = self.index.get(event.job_id)
        if known is not None and known.state.is_terminal:
            return
        if job is not None:
            self.index.put(job)
            return
        if known is None or known.attempt_count != event.attempt_count or event.state.is_terminal:
            view = self._read_one(event.job_id)
            if view is not None:
                self.index.put(IndexedJob.of(view))
            return
        self.index.put(known.changed_by(event))


def note(index: JobIndex, view: JobView) -> None:
    """A view this JobManager has just answered a write with: listed at once, before its event
    arrives (a client that submits, then lists, sees its job)."""
    known = index.get(view.job_id)
    if known is None or not known.state.is_terminal:
        index.put(IndexedJob.of(view))
