"""Where a JobManager's job events come from: ZooKeeper watches on the records the leader
already writes, so that every JobManager, standbys included, streams the same changes.

The leader persists every transition of a live job to ``jobs/<id>/status`` through its fence,
and a terminated job's outcome to ``results/<id>`` (rule 7). Each JobManager watches those
(:class:`steward.store.watches.JobWatches`: one children watch on ``jobs/``, and per live job
one one-shot watch on its status and one on its result, re-read and re-armed by one worker
thread, never a thread per job) and appends a :class:`JobEvent` to its
:class:`.journal.Journal` whenever a job's state, reason or attempt count differs from what it
last saw. Nothing is added to the leader's writes, and a failover changes nothing here: the
next leader writes the same records.

What a watch guarantees, and so what the stream does: ZooKeeper delivers a job's changes in
order, but a data watch reads the record when it fires, so two writes in quick succession may
be seen as the second alone (an intermediate state can be skipped; the last state of each
change is always seen, and the terminal state always comes from the result). When the session
is lost the watches lapse: the journal's continuity is broken, so every stream tells its
consumer to re-read (a ``reset``), and JobWatches re-reads every watched node on the new
session (and after any reconnect), in pipelined batches from its own thread.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable

from steward.errors import StewardError
from steward.ha.session import ConnectionState, Session
from steward.store.blob import BlobStore
from steward.store.results import JobResultStore
from steward.store.watches import JobWatches
from steward.wire.events import JobEvent
from steward.wire.records import JobResultEntry, JobStatusRecord
from steward.wire.redaction import DEFAULT as SECRETS
from steward.wire.states import JobState

from .journal import Journal

log = logging.getLogger(__name__)

_Seen = tuple[JobState, str | None, int]


class JobEventSource:
    """Feeds ``journal`` from the watches of ``session``; :meth:`start` once it is connected."""

    def __init__(self, session: Session, blobs: BlobStore, journal: Journal) -> None:
        self._session = session
        self._watches = JobWatches(session)
        self._results = JobResultStore(session, blobs)
        self.journal = journal
        self._lock = threading.Lock()
        self._watched: set[str] = set()
        self._seen: dict[str, _Seen] = {}
        self._stopped = False
        # Setting a job's watches takes two round trips: done on a thread of our own, so that
        # thousands of jobs (at start, or re-listed on a new session) never hold kazoo's
        # callback thread, which the election and the leader retrieval need. A result's body
        # (in blob storage) is read there too.
        self._to_watch: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._watcher = threading.Thread(target=self._watch_loop, name="job-events", daemon=True)

    def start(self) -> JobEventSource:
        self._session.add_listener(self._on_connection)
        self._watcher.start()
        self._watches.jobs(self._on_jobs)
        return self

    def stop(self) -> None:
        # Server watches have no remove here: each is dropped unread when it next fires.
        self._stopped = True
        self._session.remove_listener(self._on_connection)
        self._to_watch.put(None)
        self._watches.stop()

    @property
    def watched(self) -> int:
        """Jobs watched now (each costs two ZooKeeper watches)."""
        with self._lock:
            return len(self._watched)

    def _on_connection(self, state: ConnectionState) -> None:
        if state is ConnectionState.LOST:
            log.warning("job events may have been missed (zookeeper session lost)")
            self.journal.break_continuity()

    def _on_jobs(self, job_ids: list[str]) -> bool:
        if self._stopped:
            return False
        with self._lock:
            new = [job_id for job_id in job_ids if job_id not in self._watched]
            self._watched.update(new)
            for gone in self._watched - set(job_ids):
                self._watched.discard(gone)
                self._seen.pop(gone, None)
        for job_id in new:
            self._to_watch.put(functools.partial(self._watch, job_id))
        return True

    def _watch_loop(self) -> None:
        while (work := self._to_watch.get()) is not None and not self._stopped:
            work()

    def _watch(self, job_id: str) -> None:
        # What a watch finds when it is set is published too, even for the jobs there at start:
        # a consumer may have read the job before the watch was set, and must not miss what
        # changed in between (the journal then also holds each job's state at start).
        def on_status(record: JobStatusRecord | None, deleted: bool) -> bool:
            if self._stopped or deleted:
                return False  # the status is deleted only by the job's cleanup
            if record is not None:
                self._saw(_status_event(record))
            return True

        def on_result() -> bool:
            if not self._stopped:
                self._to_watch.put(functools.partial(self._publish_result, job_id))
            return False

        try:
            self._watches.status(job_id, on_status)
            self._watches.result(job_id, on_result)
        except StewardError as exc:
            # The session is gone: the journal's continuity breaks, kazoo re-lists jobs/.
            log.warning("cannot watch job events job=%s error=%r", job_id, exc)
            with self._lock:
                self._watched.discard(job_id)

    def _publish_result(self, job_id: str) -> None:
        try:
            entry = self._results.find(job_id)
        except StewardError as exc:
            log.warning("job result unreadable; no event job=%s error=%s", job_id, exc)
            return
        if entry is not None:
            self._saw(_result_event(entry))

    def _saw(self, event: JobEvent) -> None:
        seen: _Seen = (event.state, event.reason, event.attempt_count)
        with self._lock:
            before = self._seen.get(event.job_id)
            if before is not None and before[0].is_terminal:
                return  # the result has the last word (a late status write adds nothing)
            if before == seen:
                return
            # Kept until the job's cleanup removes jobs/<id> (_on_jobs).
            self._seen[event.job_id] = seen
        self.journal.append(event)


def _status_event(record: JobStatusRecord) -> JobEvent:
    return JobEvent(
        job_id=record.job_id,
        name=record.name,
        state=record.state,
        reason=None if record.reason is None else SECRETS.text(record.reason),
        epoch=record.epoch,
        at=record.updated_at,
        submitter=record.submitter,
        team=record.team,
        attempt_count=record.attempt_count,
    )


def _result_event(entry: JobResultEntry) -> JobEvent:
    return JobEvent(
        job_id=entry.job_id,
        name=entry.name,
        state=JobState.of(entry.state),
        reason=SECRETS.text(entry.error.message) if entry.error else None,
        epoch=entry.epoch,
        at=entry.finished_at,
        submitter=entry.submitter,
        team=entry.team,
        attempt_count=entry.attempt_count,
    )
