"""Watches on the job records any JobManager may read: which jobs exist, each one's status
record and its result. What :mod:`steward.jobmanager.events` turns into live events.

Two server watches, whatever the job count: one persistent recursive watch on ``jobs/`` (a job
created or deleted, a status record written or deleted; the checkpoints below a job are
ignored) and one on ``results/`` (a result created; one a submission's check created and
deleted in one transaction is not read when both events are in one batch), through
:class:`steward.ha.persistent_watches.PersistentWatches` (kazoo 2.11 has no ``add_watch``). A
watch event only queues what it names, on kazoo's connection thread: a job created or deleted
(its id is in the event's path: nothing is listed), or the job whose status or result has a
callback here (others are dropped). One worker thread of ours re-reads the queued nodes, a
multiRead a batch (no watch set by a read), in the order their changes were seen, and never on
kazoo's threads (election and leader retrieval need them). ``jobs/`` is listed only when the
watches are (re)added: with 10,000 jobs a listing per creation made a standby's work grow with
the square of a burst. A job's callback ends when it returns False.

Neither kazoo nor the server keeps a persistent watch across a reconnect, so after every
reconnect and on every new session the worker adds both watches again, and only then re-lists
``jobs/`` and re-reads every job's status and result: what changed while no watch was held is
read, what changes after is an event. :meth:`JobWatches.stop` removes both from the server
(the leader holds none).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.protocol.states import EventType, WatchedEvent

from steward.errors import CorruptStateError, StewardError, ZooKeeperUnavailableError
from steward.ha.kazoo_errors import KAZOO_ERRORS
from steward.ha.session import ConnectionState, Session
from steward.store import zk
from steward.wire.record_format import decode_status
from steward.wire.records import JobStatusRecord
from steward.wire.values import check_job_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobsChanged:
    """What the jobs' callback is told: every job id under ``jobs/`` (``complete``: a listing,
    any other job is gone), or the jobs created and deleted since the last call (from the
    watch's events, each job's last change of a batch; the two lists never share an id)."""

    created: list[str]
    deleted: list[str]
    complete: bool


OnJobs = Callable[[JobsChanged], bool]
"""Called with a listing of the jobs, then with their changes; returning False ends the
watch."""
OnStatus = Callable[[JobStatusRecord | None, bool], bool]
"""Called with the job's status record (None: none, or unreadable) and whether the record was
just deleted (the job's cleanup); returning False ends the watch."""
OnResult = Callable[[], bool]
"""Called once the job's result exists (its body is in blob storage: read it off kazoo's
callback thread, :class:`~steward.store.results.JobResultStore`); False ends the watch."""

BATCH = 500
"""Reads in flight at once: enough to hide round trips, bounded memory."""

_RELIST = "relist"
"""Queued: list ``jobs/`` (the jobs' callback was just given)."""
_REARM = "rearm"
"""Queued: (re)connected, add the server watches and re-read everything."""


@dataclass
class _Watch:
    kind: str  # "status" or "result"
    job_id: str
    path: str
    callback: Callable[..., bool]


@dataclass(frozen=True)
class _JobChange:
    job_id: str
    created: bool  # else deleted


_Item = tuple[_Watch, bool] | _JobChange | str


class JobWatches:
    """Holds the two server watches; callbacks run on one worker thread of ours, in the order
    their nodes' changes were seen, and never on kazoo's threads."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._layout = session.layout
        self._persistent = session.persistent_watches
        self._lock = threading.Lock()
        self._watches: dict[tuple[str, str], _Watch] = {}
        self._on_jobs: OnJobs | None = None
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="job-watches", daemon=True)
        self._started = False

    def jobs(self, on_jobs: OnJobs) -> None:
        """Call ``on_jobs`` with every job id now (and after every re-arm), and with the jobs
        created or deleted in between (on the worker thread)."""
        with self._lock:
            self._on_jobs = on_jobs
        self._start()
        self._queue.put(_RELIST)

    def status(self, job_id: str, on_status: OnStatus) -> None:
        self._add(_Watch("status", job_id, self._layout.job_status(job_id), on_status))

    def result(self, job_id: str, on_result: OnResult) -> None:
        self._add(_Watch("result", job_id, self._layout.result(job_id), on_result))

    def stop(self) -> None:
        """No more callbacks; the worker removes the server watches and ends."""
        self._session.remove_listener(self._on_connection)
        with self._lock:
            self._watches.clear()
            self._on_jobs = None
        self._queue.put(None)

    @property
    def count(self) -> int:
        """Per-job callbacks held now (the server holds two watches whatever the count)."""
        with self._lock:
            return len(self._watches)

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._session.add_listener(self._on_connection)
        self._queue.put(_REARM)
        self._worker.start()

    def _add(self, watch: _Watch) -> None:
        self._start()
        with self._lock:
            self._watches[(watch.kind, watch.job_id)] = watch
        self._queue.put((watch, False))

    def _on_connection(self, state: ConnectionState) -> None:
        if state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED):
            log.info("re-arming job watches count=%d state=%s", self.count, state)
            self._queue.put(_REARM)

    # ------------------------------------------------------------------ kazoo's connection thread

    def _on_job_event(self, event: WatchedEvent) -> None:
        # Hand off, never read here (PersistentWatches: the connection thread).
        job_id, _, below = event.path[len(self._layout.jobs) + 1 :].partition("/")
        if not job_id:
            return
        if not below:
            if event.type in (EventType.CREATED, EventType.DELETED) and _is_job_id(job_id):
                self._queue.put(_JobChange(job_id, event.type == EventType.CREATED))
        elif below == "status":
            self._fired("status", job_id, event.type == EventType.DELETED)

    def _on_result_event(self, event: WatchedEvent) -> None:
        job_id = event.path[len(self._layout.results) + 1 :]
        if job_id and "/" not in job_id:
            self._fired("result", job_id, event.type == EventType.DELETED)

    def _fired(self, kind: str, job_id: str, deleted: bool) -> None:
        with self._lock:
            watch = self._watches.get((kind, job_id))
        if watch is not None:
            self._queue.put((watch, deleted))

    # ------------------------------------------------------------------ the worker

    def _work(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                batch = [item]
                while len(batch) < BATCH:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        return
                    batch.append(more)
                self._handle(batch)
        finally:
            self._unwatch()

    def _handle(self, batch: list[_Item]) -> None:
        reads = without_churn([item for item in batch if isinstance(item, tuple)])
        if _REARM in batch:
            if not self._rearm():
                return  # no connection: the reconnect's re-arm re-reads every job
            with self._lock:
                reads += [(watch, False) for watch in self._watches.values()]
        if _REARM in batch or _RELIST in batch:
            # The listing is newer than every change queued before it: those are in it.
            self._relist()
        else:
            self._changed([item for item in batch if isinstance(item, _JobChange)])
        for start in range(0, len(reads), BATCH):
            self._read(reads[start : start + BATCH])

    def _rearm(self) -> bool:
        """Add both server watches (again); False if the connection dropped meanwhile (the
        reconnect queues another re-arm)."""
        try:
            self._persistent.add(self._layout.jobs, self._on_job_event)
            self._persistent.add(self._layout.results, self._on_result_event)
        except KAZOO_ERRORS as exc:
            log.warning("cannot watch jobs and results error=%r", exc)
            return False
        return True

    def _unwatch(self) -> None:
        for path, watcher in (
            (self._layout.jobs, self._on_job_event),
            (self._layout.results, self._on_result_event),
        ):
            try:
                self._persistent.remove(path, watcher)
            except KAZOO_ERRORS as exc:
                # The connection dropped: the server dropped the watch with it.
                log.info("job watch not removed path=%s error=%r", path, exc)

    def _relist(self) -> None:
        with self._lock:
            on_jobs = self._on_jobs
        if on_jobs is None:
            return
        try:
            job_ids = zk.job_children(self._session.client, self._layout.jobs)
        except StewardError as exc:
            # The connection dropped: the reconnect re-lists.
            log.warning("cannot list jobs error=%r", exc)
            return
        self._tell(on_jobs, JobsChanged(job_ids, [], complete=True))

    def _changed(self, changes: list[_JobChange]) -> None:
        with self._lock:
            on_jobs = self._on_jobs
        if on_jobs is None or not changes:
            return
        last = {change.job_id: change.created for change in changes}  # in order: the last wins
        created = [job_id for job_id, made in last.items() if made]
        deleted = [job_id for job_id, made in last.items() if not made]
        self._tell(on_jobs, JobsChanged(created, deleted, complete=False))

    def _tell(self, on_jobs: OnJobs, change: JobsChanged) -> None:
        if not on_jobs(change):
            with self._lock:
                if self._on_jobs is on_jobs:
                    self._on_jobs = None

    def _read(self, batch: list[tuple[_Watch, bool]]) -> None:
        pending: list[tuple[_Watch, bool]] = []
        for watch, deleted in batch:
            if deleted and watch.kind == "status":
                self._deliver(watch, None, deleted)  # the job's cleanup: nothing to read
            elif self._live(watch):
                pending.append((watch, deleted))
        paths = [watch.path for watch, _ in pending]
        try:
            # One multiRead for the batch: one request and one answer, not one a node.
            found: Sequence[tuple[bytes, Any] | StewardError | None] = zk.read_many(
                self._session.client, paths
            )
        except ZooKeeperUnavailableError as exc:
            # The connection dropped: the reconnect re-reads every job.
            log.warning("cannot read job watches count=%d error=%r", len(pending), exc)
            return
        except StewardError:
            # One node refused (its ACL, say): the others are read one by one, not lost with it.
            found = [self._read_one(path) for path in paths]
        for (watch, deleted), read in zip(pending, found, strict=True):
            if isinstance(read, StewardError):
                log.warning("cannot read job watch job=%s error=%r", watch.job_id, read)
                continue
            self._deliver(watch, None if read is None else read[0], deleted)

    def _read_one(self, path: str) -> tuple[bytes, Any] | StewardError | None:
        try:
            return zk.read(self._session.client, path)
        except StewardError as exc:
            return exc

    def _live(self, watch: _Watch) -> bool:
        with self._lock:
            return self._watches.get((watch.kind, watch.job_id)) is watch

    def _deliver(self, watch: _Watch, data: bytes | None, deleted: bool) -> None:
        if not self._live(watch):
            return
        if watch.kind == "status":
            keep = watch.callback(_decode(data, watch.job_id), deleted)
        else:
            # The result exists; its body is in blob storage, read by the callback's owner.
            keep = True if data is None else watch.callback()
        if not keep:
            with self._lock:
                if self._watches.get((watch.kind, watch.job_id)) is watch:
                    del self._watches[(watch.kind, watch.job_id)]


def without_churn(reads: list[tuple[_Watch, bool]]) -> list[tuple[_Watch, bool]]:
    """``reads`` but a result's deletion and every read of that result queued before it: a
    submission's check that its job has no result creates and deletes ``results/<id>`` in one
    transaction (:class:`~steward.store.group_commit.Absent`), and reading what is already
    gone would find nothing, a read a submission on every standby. A result created after
    the deletion is read."""
    gone = {
        watch.job_id: i
        for i, (watch, deleted) in enumerate(reads)
        if deleted and watch.kind == "result"
    }
    if not gone:
        return reads
    return [
        (watch, deleted)
        for i, (watch, deleted) in enumerate(reads)
        if watch.kind != "result" or i > gone.get(watch.job_id, -1)
    ]


def _decode(data: bytes | None, job_id: str) -> JobStatusRecord | None:
    if data is None:
        return None
    try:
        record = decode_status(data, job_id)
    except CorruptStateError as exc:
        log.warning("unreadable job status ignored job=%s error=%s", job_id, exc)
        return None
    return record if record.job_id == job_id else None


def _is_job_id(name: str) -> bool:
    try:
        check_job_id(name)
    except ValueError:
        return False  # a stray znode (zk.job_children logs it when jobs/ is listed)
    return True
