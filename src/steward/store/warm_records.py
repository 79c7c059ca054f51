"""A warm standby's copy of what a new leader's recovery reads of every live job (its graph
pointer, and its status record with the znode's version, decoded) and of every execution lease
(issue 22).

A standby follows ``jobgraphs/``, ``jobs/`` and ``executions/`` with three persistent recursive
watches (``jobs/`` shared on the server with :class:`~steward.store.watches.JobWatches`), and
one worker thread of ours re-reads what each event names. On grant, :meth:`WarmRecords.take`
hands recovery what it holds, if it can vouch for it, and stops following (a leader writes
these records itself). Every job the snapshot lacks is read from ZooKeeper, as without it.

Why a snapshot is as new as the grant's fencing write (docs/architecture.md, "A warm
standby"): ZooKeeper sends one session's watch events and replies in zxid order, so by the time
the grant's compare-and-set of ``leader/epoch`` is acknowledged, every event of an earlier write
was handed to :meth:`_changed` (on kazoo's connection thread, before that reply), which at
once drops the entry the event names and queues its re-read. :meth:`take` queues a barrier
behind those re-reads and waits for it. An entry is kept only if, between its read's request
and its reply, no event named it and the connection did not change: a read answered before a
write but handled after its event is dropped, never kept. Neither kazoo nor the server keeps
a persistent watch across a reconnect, so a connection change (heard on kazoo's connection
thread, before any request of the next connection) empties the copy, and it is vouched for
again only once the watches are added again and every live job and lease re-read. Any doubt (a
barrier not served in time, a re-read not finished, another client) and :meth:`take` returns
None: recovery then reads everything, as it always did.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, WatchedEvent

from steward.errors import StewardError
from steward.ha.kazoo_errors import KAZOO_ERRORS
from steward.ha.session import ConnectionState, Session
from steward.store import zk
from steward.store.warm_snapshot import (
    LEASE,
    POINTER,
    STATUS,
    Held,
    WarmSnapshot,
    decode,
)
from steward.wire.jobs import JobGraphPointer
from steward.wire.records import ExecutionLease, JobStatusRecord

log = logging.getLogger(__name__)

BATCH = 500
"""Reads in flight at once: enough to hide round trips, bounded memory."""
_Key = tuple[str, str]
"""(kind, job id): what one event names and one read refreshes."""
_NOT_ANSWERED: tuple[type[Exception], ...] = (*KAZOO_ERRORS, StewardError)
"""What adding a watch (kazoo's) or a listing (ours, translated) raises on a lost connection."""
_REARM = "rearm"
_UNWATCH = "unwatch"


@dataclass
class _Barrier:
    served: threading.Event = field(default_factory=threading.Event)


_Item = _Key | str | _Barrier


class WarmRecords:
    """Follows every live job's pointer and record, and every lease, while this JobManager
    stands by:
    :meth:`start` once the session is up, :meth:`take` on grant, :meth:`follow` when the
    term ends, :meth:`stop` at the end."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._layout = session.layout
        self._lock = threading.Lock()
        self._pointers: dict[str, JobGraphPointer] = {}
        self._records: dict[str, tuple[JobStatusRecord, int]] = {}
        self._leases: dict[str, ExecutionLease] = {}
        self._generations: dict[_Key, int] = {}
        """Events seen per key since the connection's change: a read is kept only if none
        came between its request and its reply."""
        self._connection = 0
        """Bumped at every connection change: a read is kept only within one connection."""
        self._armed: int | None = None
        """The connection on which the three watches were acknowledged."""
        self._complete: int | None = None
        """The connection on which every live job and lease was re-read after the watches
        were added."""
        self._following = False
        self._hooked: KazooClient | None = None
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="warm-records", daemon=True)

    # ------------------------------------------------------------------ the owner's side

    def start(self) -> WarmRecords:
        self._session.add_listener(self._on_session)
        self._worker.start()
        self.follow()
        return self

    def stop(self) -> None:
        self._session.remove_listener(self._on_session)
        self._pause()
        self._queue.put(None)

    def follow(self) -> None:
        """Follow the records (again): at start, and when a term ends."""
        with self._lock:
            if self._following:
                return
            self._following = True
            self._forget()
        self._queue.put(_REARM)

    def take(self, timeout: float) -> WarmSnapshot | None:
        """What is held, if it is as new as every write acknowledged before this call (the
        grant's fencing write); None if that cannot be vouched for within ``timeout``
        seconds, or at once if every live job has not been read since the watches were last
        added (reading them all is then no slower). Either way following stops: the leader
        writes these records itself."""
        with self._lock:
            complete = self._complete == self._connection
        barrier = _Barrier()
        if complete:  # else reading every job is no slower than waiting for the re-read
            self._queue.put(barrier)
        served = complete and barrier.served.wait(timeout)
        with self._lock:
            trusted = (
                served
                and self._following
                and self._armed == self._connection == self._complete
                and self._hooked is self._session.client
            )
            snapshot = self._snapshot() if trusted else None
        if snapshot is None:
            log.warning("warm records not vouched for; recovery reads every job served=%s", served)
        self._pause()
        return snapshot

    @property
    def held(self) -> int:
        """Jobs whose pointer and record are held now."""
        with self._lock:
            return sum(1 for job_id in self._pointers if job_id in self._records)

    def _snapshot(self) -> WarmSnapshot:
        """Under the lock; hands the dicts over (:meth:`_pause` starts afresh)."""
        records, self._records = self._records, {}
        pointers, self._pointers = self._pointers, {}
        leases, self._leases = self._leases, {}
        return WarmSnapshot(
            pointers,
            {job_id: record for job_id, (record, _) in records.items()},
            {job_id: version for job_id, (_, version) in records.items()},
            leases,
        )

    def _pause(self) -> None:
        with self._lock:
            if not self._following:
                return
            self._following = False
            self._forget()
        self._queue.put(_UNWATCH)

    def _forget(self) -> None:
        """Under the lock: nothing held is vouched for any more."""
        self._connection += 1
        self._pointers, self._records, self._leases, self._generations = {}, {}, {}, {}
        self._armed = self._complete = None

    # ------------------------------------------------------------------ connection changes

    def _on_kazoo_state(self, _state: object) -> None:
        """Kazoo's connection thread, at the change itself: before any request of a next
        connection is sent, and before any event of it."""
        with self._lock:
            self._forget()

    def _on_session(self, state: ConnectionState) -> None:
        """The session's listener thread (later than :meth:`_on_kazoo_state`)."""
        with self._lock:
            self._forget()
            following = self._following
        if following and state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED):
            self._queue.put(_REARM)

    # ------------------------------------------------------------------ kazoo's connection thread

    def _on_job_event(self, event: WatchedEvent) -> None:
        job_id, _, below = event.path[len(self._layout.jobs) + 1 :].partition("/")
        if job_id and below == STATUS:
            self._changed((STATUS, job_id), event)

    def _on_graph_event(self, event: WatchedEvent) -> None:
        job_id = event.path[len(self._layout.jobgraphs) + 1 :]
        if job_id and "/" not in job_id:
            self._changed((POINTER, job_id), event)

    def _on_lease_event(self, event: WatchedEvent) -> None:
        job_id = event.path[len(self._layout.executions) + 1 :]
        if job_id and "/" not in job_id:
            self._changed((LEASE, job_id), event)

    def _changed(self, key: _Key, event: WatchedEvent) -> None:
        """Drop what is held of ``key`` at once, and queue its re-read (none if deleted)."""
        with self._lock:
            if not self._following:
                return
            self._generations[key] = self._generations.get(key, 0) + 1
            self._drop(key)
        if event.type != EventType.DELETED:
            self._queue.put(key)

    def _drop(self, key: _Key) -> None:
        kind, job_id = key
        if kind == STATUS:
            self._records.pop(job_id, None)
        elif kind == POINTER:
            self._pointers.pop(job_id, None)
        else:
            self._leases.pop(job_id, None)

    # ------------------------------------------------------------------ the worker

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            batch: list[_Item] = [item]
            while len(batch) < BATCH and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    self._handle(batch)
                    self._unwatch()
                    return
                batch.append(more)
            self._handle(batch)
        self._unwatch()

    def _handle(self, batch: list[_Item]) -> None:
        """In queue order: what comes before a barrier is done before it is served."""
        keys: list[_Key] = []
        for item in batch:
            if isinstance(item, tuple):
                keys.append(item)
                continue
            self._read(keys)
            keys = []
            if isinstance(item, _Barrier):
                item.served.set()
            elif item == _REARM:
                self._rearm()
            elif item == _UNWATCH:
                self._unwatch()
        self._read(keys)

    def _rearm(self) -> None:
        """Add both watches, then re-read every live job; vouched for once all is read on
        the connection the watches were added on."""
        with self._lock:
            if not self._following:
                return
            connection = self._connection
            self._hook()
        try:
            self._watch()
            live = zk.job_children(self._session.client, self._layout.jobgraphs)
            leases = zk.job_children(self._session.client, self._layout.executions)
        except _NOT_ANSWERED as exc:
            log.warning("warm records cannot follow the jobs error=%r", exc)
            return  # the connection dropped: its change queues another re-arm
        with self._lock:
            if self._connection != connection:
                return
            self._armed = connection
        keys = [(kind, job_id) for job_id in live for kind in (POINTER, STATUS)]
        self._read(keys + [(LEASE, job_id) for job_id in leases])
        with self._lock:
            if self._armed == self._connection == connection:
                self._complete = connection
                log.info("warm records follow jobs=%d leases=%d", len(live), len(leases))

    def _hook(self) -> None:
        """Under the lock: hear connection changes on kazoo's own thread (a new client after
        a restart of the session's client is hooked again)."""
        client = self._session.client
        if self._hooked is not client:
            client.add_listener(self._on_kazoo_state)
            self._hooked = client

    def _watch(self) -> None:
        watches = self._session.persistent_watches
        watches.add(self._layout.jobgraphs, self._on_graph_event)
        watches.add(self._layout.jobs, self._on_job_event)
        watches.add(self._layout.executions, self._on_lease_event)

    def _unwatch(self) -> None:
        with self._lock:
            if self._following:
                return  # followed again meanwhile
        watches = self._session.persistent_watches
        for path, watcher in (
            (self._layout.jobgraphs, self._on_graph_event),
            (self._layout.jobs, self._on_job_event),
            (self._layout.executions, self._on_lease_event),
        ):
            try:
                watches.remove(path, watcher)
            except KAZOO_ERRORS as exc:
                log.info("warm records' watch not removed path=%s error=%r", path, exc)

    def _read(self, keys: list[_Key]) -> None:
        for start in range(0, len(keys), BATCH):
            self._read_batch(keys[start : start + BATCH])

    def _read_batch(self, keys: list[_Key]) -> None:
        """Read ``keys`` in multiReads; keep each answer only if no event named its key and
        the connection did not change since before the request."""
        with self._lock:
            if not self._following or self._armed != self._connection:
                return  # not watched on this connection: the re-arm reads again
            connection = self._connection
            issued = [self._generations.get(key, 0) for key in keys]
        try:
            answers = zk.read_many(self._session.client, [self._path(key) for key in keys])
        except StewardError as exc:  # the connection dropped: its change forgets all
            log.info("warm records not read jobs=%d error=%r", len(keys), exc)
            return
        decoded = [
            (None, -1) if read is None else decode(*key, read)
            for key, read in zip(keys, answers, strict=True)
        ]
        with self._lock:
            if not self._connection == connection == self._armed:
                return
            for key, generation, (value, version) in zip(keys, issued, decoded, strict=True):
                if self._generations.get(key, 0) == generation:
                    self._keep(key, value, version)

    def _keep(self, key: _Key, decoded: Held | None, version: int) -> None:
        """Under the lock: hold what was read, or nothing (missing or unreadable: then
        recovery reads it itself and judges it as it always did)."""
        job_id = key[1]
        if isinstance(decoded, JobStatusRecord):
            self._records[job_id] = (decoded, version)
        elif isinstance(decoded, JobGraphPointer):
            self._pointers[job_id] = decoded
        elif isinstance(decoded, ExecutionLease):
            self._leases[job_id] = decoded
        else:
            self._drop(key)

    def _path(self, key: _Key) -> str:
        kind, job_id = key
        if kind == LEASE:
            return self._layout.execution(job_id)
        return self._layout.job_status(job_id) if kind == STATUS else self._layout.jobgraph(job_id)
