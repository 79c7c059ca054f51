"""Where a JobManager's job events come from: on a standby, ZooKeeper watches on the records the
leader writes; on the leader, the leader's own writes. Every JobManager streams the same changes.

The leader persists every transition of a live job to ``jobs/<id>/status`` through its fence,
and a terminated job's outcome to ``results/<id>`` (rule 7). A standby watches those
(:class:`steward.store.watches.JobWatches`: two persistent recursive watches, on ``jobs/`` and
on ``results/``, whatever the job count; what they name is re-read by one worker thread, never
a thread per job). The leader need not read back what it has just written: its
stores tell this source of every write ZooKeeper acknowledged (it is their
:class:`~steward.store.record_feed.RecordFeed`), and it holds no watch. Either way a
:class:`JobEvent` is appended to the :class:`.journal.Journal` whenever a job's state, reason
or attempt count differs from what was last seen, with the job's listing entry built from the
record (so the job index never reads it back either); a record that is no news builds neither.

One source at a time, switched with the leadership:

- :meth:`JobEventSource.lead` (granted): the watches are dropped. What they had not yet
  delivered (the previous leader's last writes) comes from the reads of the new leader's
  recovery, which reads every live job's record and which jobs have a result, through the
  same stores (:meth:`read`, :meth:`have_results`), until :meth:`recovered`. A read (or a
  watch's delivery still in flight) of a job the leader has written since the grant is
  dropped: after the grant only this leader writes these records, so the read is older than,
  or the same as, the write.
- :meth:`JobEventSource.follow` (the term ended): fed writes are ignored from then on (a
  deposed leader's writes fail anyway), and the watches are set again; setting a watch reads
  its node, so what changed meanwhile is published.

What a watch guarantees, and so what a standby's stream does: ZooKeeper delivers a job's
changes in order, but a data watch reads the record when it fires, so two writes in quick
succession may be seen as the second alone (an intermediate state can be skipped; the last
state of each change is always seen, and the terminal state always comes from the result). The
leader's stream has every change it wrote. When the session is lost the journal's continuity is
broken, so every stream tells its consumer to re-read (a ``reset``), and JobWatches adds its
watches again and re-reads every followed job on the new session (and after any reconnect).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable, Collection, Sequence

from steward.errors import StewardError
from steward.ha.session import ConnectionState, Session
from steward.store.blob import BlobStore
from steward.store.results import JobResultStore
from steward.store.watches import JobsChanged, JobWatches
from steward.wire.events import JobEvent
from steward.wire.records import JobResultEntry, JobStatusRecord
from steward.wire.redaction import DEFAULT as SECRETS
from steward.wire.states import JobState

from ..indexed_job import IndexedJob
from .journal import Journal

log = logging.getLogger(__name__)

_Seen = tuple[JobState, str | None, int]


class JobEventSource:
    """Feeds ``journal``; :meth:`start` once the session is connected (it follows the watches
    until :meth:`lead`). The leader's stores call :meth:`wrote`, :meth:`ended` and
    :meth:`removed` (a :class:`~steward.store.record_feed.RecordFeed`)."""

    def __init__(self, session: Session, blobs: BlobStore, journal: Journal) -> None:
        self._session = session
        self._watches = JobWatches(session)
        self._results = JobResultStore(session, blobs)
        self.journal = journal
        self._lock = threading.Lock()
        self._watched: set[str] = set()
        self._seen: dict[str, _Seen] = {}
        self._stopped = False
        self._leading = False
        self._fed_since_lead: set[str] | None = None
        """Jobs written by this leader while it recovers (None: not recovering)."""
        # Setting a job's watches takes two round trips: done on a thread of our own, so that
        # thousands of jobs (at start, or re-listed on a new session) never hold kazoo's
        # callback thread, which the election and the leader retrieval need. A result's body
        # (in blob storage) is read there too.
        self._to_watch: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._watcher = threading.Thread(target=self._watch_loop, name="job-events", daemon=True)

    def start(self) -> JobEventSource:
        self._session.add_listener(self._on_connection)
        self._watcher.start()
        self._follow_jobs()
        return self

    def stop(self) -> None:
        self._stopped = True
        self._session.remove_listener(self._on_connection)
        self._to_watch.put(None)
        self._watches.stop()

    @property
    def watched(self) -> int:
        """Jobs followed now (none while leading; the server's watches do not grow with them)."""
        with self._lock:
            return len(self._watched)

    @property
    def leading(self) -> bool:
        return self._leading

    # ------------------------------------------------------------------ switching source

    def lead(self) -> None:
        """This JobManager leads: its writes feed the journal, the watches are dropped."""
        with self._lock:
            if self._leading:
                return
            self._leading = True
            self._fed_since_lead = set()
            self._watched.clear()
            watches, self._watches = self._watches, JobWatches(self._session)
        watches.stop()
        log.info("job events follow this leader's writes")

    def follow(self) -> None:
        """The term ended: follow the records through watches again."""
        with self._lock:
            if not self._leading:
                return
            self._leading = False
            self._fed_since_lead = None
        self._to_watch.put(self._follow_jobs)
        log.info("job events follow zookeeper watches")

    def _follow_jobs(self) -> None:
        if self._leading or self._stopped:
            return
        try:
            self._watches.jobs(functools.partial(self._on_jobs, self._watches))
        except StewardError as exc:
            # The session is gone: its end breaks the journal, the reconnect lists again.
            log.warning("cannot watch jobs error=%r", exc)

    # ------------------------------------------------------------------ the leader's writes

    def wrote(self, records: Sequence[JobStatusRecord]) -> None:
        self._saw_records(records, fed=True)

    def ended(self, entry: JobResultEntry) -> None:
        self._saw(_result_event(entry), IndexedJob.of_result(entry), fed=True)

    def removed(self, job_id: str) -> None:
        with self._lock:
            if self._leading:
                self._seen.pop(job_id, None)

    def read(self, records: Sequence[JobStatusRecord]) -> None:
        self._saw_records(records)

    def have_results(self, job_ids: Collection[str]) -> None:
        with self._lock:
            if self._fed_since_lead is None:
                return
        for job_id in job_ids:
            self._to_watch.put(functools.partial(self._publish_result, job_id))

    def recovered(self) -> None:
        """This leader's recovery is done: it read every live job's record and which jobs
        with a graph have a result, so what the watches had not delivered is published once
        the results queued meanwhile are (:meth:`lead`); then only its writes feed the
        journal."""
        self._to_watch.put(self._recovered)

    def _recovered(self) -> None:
        with self._lock:
            self._fed_since_lead = None

    # ------------------------------------------------------------------ the watches

    def _on_connection(self, state: ConnectionState) -> None:
        if state is ConnectionState.LOST:
            log.warning("job events may have been missed (zookeeper session lost)")
            self.journal.break_continuity()

    def _on_jobs(self, watches: JobWatches, change: JobsChanged) -> bool:
        with self._lock:
            if self._stopped or self._leading or watches is not self._watches:
                return False
            new = [job_id for job_id in change.created if job_id not in self._watched]
            self._watched.update(new)
            gone = self._watched.difference(change.created) if change.complete else change.deleted
            for job_id in gone:
                self._watched.discard(job_id)
                self._seen.pop(job_id, None)
        for job_id in new:
            self._to_watch.put(functools.partial(self._watch, watches, job_id))
        return True

    def _watch_loop(self) -> None:
        while (work := self._to_watch.get()) is not None and not self._stopped:
            work()

    def _watch(self, watches: JobWatches, job_id: str) -> None:
        # What a watch finds when it is set is published too, even for the jobs there at start:
        # a consumer may have read the job before the watch was set, and must not miss what
        # changed in between (the journal then also holds each job's state at start).
        def on_status(record: JobStatusRecord | None, deleted: bool) -> bool:
            if self._stopped or deleted or watches is not self._watches:
                return False  # the status is deleted only by the job's cleanup
            if record is not None:
                self._saw_records([record])
            return True

        def on_result() -> bool:
            if not self._stopped and watches is self._watches:
                self._to_watch.put(functools.partial(self._publish_result, job_id))
            return False

        if watches is not self._watches:
            return  # switched to leading meanwhile
        try:
            watches.status(job_id, on_status)
            watches.result(job_id, on_result)
        except StewardError as exc:
            # The session is gone: the journal's continuity breaks, the re-arm re-lists jobs/.
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
            self._saw(_result_event(entry), IndexedJob.of_result(entry))

    # ------------------------------------------------------------------ publishing

    def _saw(self, event: JobEvent, job: IndexedJob, *, fed: bool = False) -> None:
        self._saw_all([(event, job)], fed=fed)

    def _saw_all(
        self, observed: Sequence[tuple[JobEvent, IndexedJob]], *, fed: bool = False
    ) -> None:
        """Publish what changed among ``observed``, in order, under one hold of the lock and
        with one wake of the journal's waiters."""
        with self._lock:
            news = [
                (event, job)
                for event, job in observed
                if self._is_news(event.job_id, _seen_in(event), fed=fed)
            ]
            # Appended under the lock: the journal's order is the order the source decided in.
            self.journal.append_many(news)

    def _saw_records(self, records: Sequence[JobStatusRecord], *, fed: bool = False) -> None:
        """:meth:`_saw_all` of ``records``' events and index entries, each built only for a
        record that is news: a takeover reads (and then rewrites, adopted) every live job's
        record, nearly all as the standby last saw them, and the two cost 19 µs a record."""
        with self._lock:
            news = []
            for record in records:
                reason = None if record.reason is None else SECRETS.text(record.reason)
                if self._is_news(
                    record.job_id, (record.state, reason, record.attempt_count), fed=fed
                ):
                    news.append(_observed(record, reason))
            self.journal.append_many(news)

    def _is_news(self, job_id: str, seen: _Seen, *, fed: bool) -> bool:
        """Whether the job's change to ``seen`` is published now, noted as seen if it is;
        under the lock."""
        if not self._current(job_id, fed=fed):
            return False
        before = self._seen.get(job_id)
        if before is not None and before[0].is_terminal:
            return False  # the result has the last word (a late status write adds nothing)
        if before == seen:
            return False
        # Kept until the job's cleanup removes jobs/<id> (_on_jobs, removed).
        self._seen[job_id] = seen
        return True

    def _current(self, job_id: str, *, fed: bool) -> bool:
        """Whether an event of this origin (a write of ours, or a read) is published now;
        called under the lock."""
        if self._stopped:
            return False
        if not self._leading:
            return not fed
        written = self._fed_since_lead
        if fed:
            if written is not None:
                written.add(job_id)
            return True
        # While the term recovers, a read (recovery's, or a watch's in flight at the grant) is
        # published unless this leader wrote the job since: after the grant only this leader
        # writes these records, so a read is older than, or the same as, its write, and a
        # write not yet published will be, after the read.
        return written is not None and job_id not in written


def _seen_in(event: JobEvent) -> _Seen:
    """What of a job an event changes (another event with the same adds nothing)."""
    return (event.state, event.reason, event.attempt_count)


def _observed(record: JobStatusRecord, reason: str | None) -> tuple[JobEvent, IndexedJob]:
    """The record's event and index entry, with its ``reason`` as redacted once for both."""
    return _status_event(record, reason), IndexedJob.of_status(record, shown_reason=reason)


def _status_event(record: JobStatusRecord, reason: str | None) -> JobEvent:
    return JobEvent(
        job_id=record.job_id,
        name=record.name,
        state=record.state,
        reason=reason,
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
