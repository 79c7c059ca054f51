"""Watches on the job records any JobManager may read: which jobs exist, each one's status
record and its result. What :mod:`steward.jobmanager.events` turns into live events.

One children watch on ``jobs/`` (a kazoo ChildrenWatch: one watch, whatever the job count), and
per job a one-shot ZooKeeper watch on ``jobs/<id>/status`` and on ``results/<id>`` (an exists
watch until the result is created). Those per-job watches are not kazoo DataWatch recipes: a
DataWatch spawns a thread to re-read its node on every reconnect, so 8,000 jobs made 16,000
threads per reconnect and held kazoo's callback thread (election, leader retrieval) for seconds.
Here a fired watch only queues its job; one worker thread of ours re-reads the queued nodes in
pipelined batches and re-arms them, and re-arms every job's watches once after a reconnect
(kazoo does not restore server watches on a new connection). A watch ends when its callback
returns False.

The installed kazoo (2.11.0 here) has no ``add_watch``, so ZooKeeper's persistent recursive
watches (one watch for the whole subtree) are not used yet: the server still holds two watches
per live job. Threads and callback-thread time no longer grow with the job count.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from steward.errors import CorruptStateError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import ConnectionState, Session
from steward.wire.record_format import decode_status
from steward.wire.records import JobStatusRecord
from steward.wire.values import check_job_id

log = logging.getLogger(__name__)

OnJobs = Callable[[list[str]], bool]
"""Called with the job ids under ``jobs/``; returning False ends the watch."""
OnStatus = Callable[[JobStatusRecord | None, bool], bool]
"""Called with the job's status record (None: none, or unreadable) and whether the record was
just deleted (the job's cleanup); returning False ends the watch."""
OnResult = Callable[[], bool]
"""Called once the job's result exists (its body is in blob storage: read it off kazoo's
callback thread, :class:`~steward.store.results.JobResultStore`); False ends the watch."""

BATCH = 500
"""Reads in flight at once when re-arming: enough to hide round trips, bounded memory."""


@dataclass
class _Watch:
    kind: str  # "status" or "result"
    job_id: str
    path: str
    callback: Callable[..., bool]
    fired: Callable[[WatchedEvent], None] | None = None


class JobWatches:
    """Sets the watches; per-job callbacks run on one worker thread of ours, in the order their
    nodes' changes were seen, and never on kazoo's callback thread."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._layout = session.layout
        self._lock = threading.Lock()
        self._watches: dict[tuple[str, str], _Watch] = {}
        self._queue: queue.Queue[tuple[_Watch, bool] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="job-watches", daemon=True)
        self._started = False

    def jobs(self, on_jobs: OnJobs) -> None:
        def changed(names: list[str]) -> bool:
            return on_jobs(_job_ids(names))

        self._start()
        path = self._layout.jobs
        try:
            self._session.client.ChildrenWatch(path, changed)
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc

    def status(self, job_id: str, on_status: OnStatus) -> None:
        self._add(_Watch("status", job_id, self._layout.job_status(job_id), on_status))

    def result(self, job_id: str, on_result: OnResult) -> None:
        self._add(_Watch("result", job_id, self._layout.result(job_id), on_result))

    def stop(self) -> None:
        self._session.remove_listener(self._on_connection)
        with self._lock:
            self._watches.clear()
        self._queue.put(None)

    @property
    def count(self) -> int:
        """Per-job watches held now."""
        with self._lock:
            return len(self._watches)

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._session.add_listener(self._on_connection)
            self._worker.start()

    def _add(self, watch: _Watch) -> None:
        self._start()

        def fired(event: WatchedEvent) -> None:
            # On kazoo's callback thread: hand off, never read here. NONE is the session's
            # end: the next connection re-arms every watch (_on_connection).
            if event.type != EventType.NONE:
                self._queue.put((watch, event.type == EventType.DELETED))

        watch.fired = fired
        with self._lock:
            self._watches[(watch.kind, watch.job_id)] = watch
        self._queue.put((watch, False))

    def _on_connection(self, state: ConnectionState) -> None:
        if state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED):
            with self._lock:
                watches = list(self._watches.values())
            log.info("re-arming job watches count=%d state=%s", len(watches), state)
            for watch in watches:
                self._queue.put((watch, False))

    def _work(self) -> None:
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
            self._read(batch)

    def _read(self, batch: list[tuple[_Watch, bool]]) -> None:
        client = self._session.client
        pending: list[tuple[_Watch, bool, Any]] = []
        for watch, deleted in batch:
            if deleted and watch.kind == "status":
                # The job's cleanup: nothing to read, and no exists watch left behind on a
                # node that will not come back.
                self._deliver(watch, None, deleted)
            elif self._live(watch):
                pending.append((watch, deleted, client.get_async(watch.path, watch=watch.fired)))
        for watch, deleted, reply in pending:
            try:
                data = self._data(watch, reply)
            except KAZOO_ERRORS as exc:
                # The connection dropped: the reconnect re-arms every watch.
                log.warning("cannot read job watch job=%s error=%r", watch.job_id, exc)
                continue
            self._deliver(watch, data, deleted)

    def _data(self, watch: _Watch, reply: Any) -> bytes | None:
        try:
            data, _stat = reply.get()
            return bytes(data)
        except NoNodeError:
            # Watch for its creation; created between the two reads: read it again.
            if self._session.client.exists(watch.path, watch=watch.fired) is not None:
                self._queue.put((watch, False))
            return None

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


def _decode(data: bytes | None, job_id: str) -> JobStatusRecord | None:
    if data is None:
        return None
    try:
        record = decode_status(data, job_id)
    except CorruptStateError as exc:
        log.warning("unreadable job status ignored job=%s error=%s", job_id, exc)
        return None
    return record if record.job_id == job_id else None


def _job_ids(names: list[str]) -> list[str]:
    ids = []
    for name in names:
        try:
            ids.append(check_job_id(name))
        except ValueError:
            continue  # a stray znode (store.zk.job_children logs it where it matters)
    return ids
