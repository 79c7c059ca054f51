"""Watches on the job records any JobManager may read: which jobs exist, each one's status
record and its result. What :mod:`steward.jobmanager.events` turns into live events.

Three kinds of kazoo watch, decoded here so that nothing of kazoo escapes the store layer:
one children watch on ``jobs/`` (the live jobs, and the ended ones whose cleanup is not done),
and per job one data watch on ``jobs/<id>/status`` and one on ``results/<id>`` (an exists watch
until the result is created). A watch ends when its callback returns False; kazoo re-arms the
others after every change and re-reads them on a new session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from steward.errors import CorruptStateError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import Session
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


class JobWatches:
    """Sets the watches; every callback runs on kazoo's callback thread, in ZooKeeper's order."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._layout = session.layout

    def jobs(self, on_jobs: OnJobs) -> None:
        def changed(names: list[str]) -> bool:
            return on_jobs(_job_ids(names))

        self._watch(self._layout.jobs, lambda client, path: client.ChildrenWatch(path, changed))

    def status(self, job_id: str, on_status: OnStatus) -> None:
        def changed(
            data: bytes | None, _stat: ZnodeStat | None, event: WatchedEvent | None
        ) -> bool:
            deleted = event is not None and event.type == EventType.DELETED
            return on_status(_decode(JobStatusRecord, data, job_id), deleted)

        path = self._layout.job_status(job_id)
        self._watch(path, lambda client, path: client.DataWatch(path, changed))

    def result(self, job_id: str, on_result: OnResult) -> None:
        def changed(data: bytes | None, _stat: ZnodeStat | None) -> bool:
            return True if data is None else on_result()

        path = self._layout.result(job_id)
        self._watch(path, lambda client, path: client.DataWatch(path, changed))

    def _watch(self, path: str, start: Callable[..., object]) -> None:
        try:
            start(self._session.client, path)
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc


R = TypeVar("R", bound=JobStatusRecord)


def _decode(kind: type[R], data: bytes | None, job_id: str) -> R | None:
    if data is None:
        return None
    try:
        record = kind.from_json(data)
    except CorruptStateError as exc:
        log.warning("unreadable %s ignored job=%s error=%s", kind.kind_name, job_id, exc)
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
