"""The log lines of a Livy batch: its latest attempt's log, read from the TaskManager that ran
it through the JobManager's log proxy (:mod:`.logs`), or from the log archive once that
TaskManager no longer has it (:mod:`steward.store.log_archive`).

A batch's own view carries its last :data:`~steward.wire.livy.LOG_TAIL` lines (the
TaskManager sends just those); ``GET /batches/{id}/log`` pages by line as Livy does, which
needs the line count: each call reads the bytes added since the last one and the asked lines
from a remembered offset near them (:mod:`.livy_line_index`), never the whole log again. A log that
cannot be read (no attempt yet, neither its TaskManager nor the archive has it) is no lines,
never an error: a Livy client polls a batch's view and must not fail on it.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from steward.errors import BlobStoreError
from steward.store.log_archive import LogArchive
from steward.wire.logs import taskmanager_log_path
from steward.wire.rest import JobView

from .backend import ApiBackend
from .livy_line_index import MAX_LINE, LineIndexes, Lines, Reading, page_lines
from .logs import LogProxy

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


async def tail(request: Request, backend: ApiBackend, view: JobView, count: int) -> list[str]:
    """The last ``count`` lines of the latest attempt's log: its TaskManager sends just
    those; the archive is paged as ``/log`` pages it."""
    if not view.attempts:
        return []
    url = _log_url(backend, view)
    if url is not None:
        found = await _tail_of_taskmanager(request, url, view, count)
        if found is not None:
            return found
    archived = await _page(_indexes(request), _archive_source(request, view), view, None, count)
    return [] if archived is None else archived.lines


async def _tail_of_taskmanager(
    request: Request, url: str, view: JobView, count: int
) -> list[str] | None:
    proxy: LogProxy = request.app.state.log_proxy
    params = {"offset": "0", "follow": "false", "tail": str(count)}
    kept: collections.deque[str] = collections.deque(maxlen=count)
    try:
        async with proxy.client().stream("GET", url, params=params, timeout=_TIMEOUT) as answer:
            if answer.status_code != 200:
                return None
            async for line in answer.aiter_lines():
                kept.append(line[:MAX_LINE])
    except httpx.HTTPError as exc:
        log.info("batch log unreadable job=%s error=%s", view.job_id, exc)
        return None
    return list(kept)


async def page(
    request: Request, backend: ApiBackend, view: JobView, start: int | None, size: int
) -> Lines:
    """Lines ``start`` to ``start + size`` (None: the last ``size``) and the line count: the
    bytes added since the last call are read to count them, and the asked lines from the
    nearest offset this JobManager remembers before them (:mod:`.livy_line_index`)."""
    if not view.attempts:
        return Lines(0, 0, [])
    for source in (_taskmanager_source(request, backend, view), _archive_source(request, view)):
        if source is None:
            continue
        found = await _page(_indexes(request), source, view, start, size)
        if found is not None:
            return found
    return Lines(0, 0, [])


async def _page(
    indexes: LineIndexes, source: _Source, view: JobView, start: int | None, size: int
) -> Lines | None:
    key = (view.job_id, view.attempts[-1].number, source.name)
    return await page_lines(indexes, key, source.read, start, size)


def _indexes(request: Request) -> LineIndexes:
    found: LineIndexes | None = getattr(request.app.state, "livy_line_indexes", None)
    if found is None:
        found = request.app.state.livy_line_indexes = LineIndexes()
    return found


@dataclass(frozen=True)
class _Source:
    """Where an attempt's log is read from an offset: None if it has no such log."""

    name: str
    read: Callable[[Reading], Awaitable[Reading | None]]


def _taskmanager_source(request: Request, backend: ApiBackend, view: JobView) -> _Source | None:
    url = _log_url(backend, view)
    if url is None:
        return None
    proxy: LogProxy = request.app.state.log_proxy

    async def read(reading: Reading) -> Reading | None:
        params = {"offset": str(reading.offset), "follow": "false"}
        try:
            async with proxy.client().stream("GET", url, params=params, timeout=_TIMEOUT) as answer:
                if answer.status_code != 200:
                    return None
                async for chunk in answer.aiter_bytes():
                    reading.feed(chunk)
                    if reading.enough:
                        break
        except httpx.HTTPError as exc:
            log.info("batch log unreadable job=%s error=%s", view.job_id, exc)
            return None
        return reading

    return _Source("taskmanager", read)


def _archive_source(request: Request, view: JobView) -> _Source:
    """The log archive: for a TaskManager that no longer has the log (stopped, lost, its
    retention ran)."""
    archive: LogArchive = request.app.state.log_archive
    number = view.attempts[-1].number

    async def read(reading: Reading) -> Reading | None:
        try:
            return await run_in_threadpool(_read_archived, archive, view.job_id, number, reading)
        except (BlobStoreError, OSError) as exc:
            log.info("archived batch log unreadable job=%s error=%s", view.job_id, exc)
            return None

    return _Source("archive", read)


def _read_archived(
    archive: LogArchive, job_id: str, attempt: int, reading: Reading
) -> Reading | None:
    opened = archive.open(job_id, attempt)
    if opened is None:
        return None
    with opened:
        opened.seek(reading.offset)
        while not reading.enough and (chunk := opened.read(_CHUNK)):
            reading.feed(chunk)
    return reading


def _log_url(backend: ApiBackend, view: JobView) -> str | None:
    attempt = view.attempts[-1]
    for taskmanager in backend.reader.taskmanagers():
        if taskmanager.id == attempt.taskmanager and taskmanager.http_address:
            path = taskmanager_log_path(view.job_id, attempt.number, internal=True)
            return taskmanager.http_address + path
    return None
