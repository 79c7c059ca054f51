"""The log lines of a Livy batch: its latest attempt's log, read from the TaskManager that ran
it through the JobManager's log proxy (:mod:`.logs`), or from the log archive once that
TaskManager no longer has it (:mod:`steward.store.log_archive`).

A batch's own view carries its last :data:`~steward.wire.livy.LOG_TAIL` lines (the
TaskManager sends just those); ``GET /batches/{id}/log`` pages by line as Livy does, which
needs the line count: the log is streamed once and only the asked lines are kept. A log that
cannot be read (no attempt yet, neither its TaskManager nor the archive has it) is no lines,
never an error: a Livy client polls a batch's view and must not fail on it.
"""

from __future__ import annotations

import collections
import io
import logging
from dataclasses import dataclass

import httpx
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from steward.errors import BlobStoreError
from steward.store.log_archive import LogArchive
from steward.wire.logs import taskmanager_log_path
from steward.wire.rest import JobView

from .backend import ApiBackend
from .logs import LogProxy

log = logging.getLogger(__name__)

MAX_LINE = 10_000
"""Characters kept of one line."""
_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


@dataclass(frozen=True)
class Lines:
    start: int
    total: int
    lines: list[str]


async def tail(request: Request, backend: ApiBackend, view: JobView, count: int) -> list[str]:
    """The last ``count`` lines of the latest attempt's log."""
    found = await _read(request, backend, view, None, count, tail=count)
    return found.lines


async def page(
    request: Request, backend: ApiBackend, view: JobView, start: int | None, size: int
) -> Lines:
    """Lines ``start`` to ``start + size`` (None: the last ``size``) and the line count."""
    return await _read(request, backend, view, start, size, tail=None)


async def _read(
    request: Request,
    backend: ApiBackend,
    view: JobView,
    start: int | None,
    size: int,
    *,
    tail: int | None,
) -> Lines:
    if not view.attempts:
        return Lines(0, 0, [])
    url = _log_url(backend, view)
    if url is not None:
        proxy: LogProxy = request.app.state.log_proxy
        params = {"offset": "0", "follow": "false"} | ({"tail": str(tail)} if tail else {})
        try:
            async with proxy.client().stream("GET", url, params=params, timeout=_TIMEOUT) as answer:
                if answer.status_code == 200:
                    keeper = _Keeper(start, size)
                    async for line in answer.aiter_lines():
                        keeper.add(line)
                    return keeper.lines()
        except httpx.HTTPError as exc:
            log.info("batch log unreadable job=%s error=%s", view.job_id, exc)
    # The TaskManager no longer has it (stopped, lost, its retention ran): the archive may.
    archive: LogArchive = request.app.state.log_archive
    number = view.attempts[-1].number
    try:
        found = await run_in_threadpool(_archived, archive, view.job_id, number, start, size)
    except (BlobStoreError, OSError) as exc:
        log.info("archived batch log unreadable job=%s error=%s", view.job_id, exc)
        found = None
    return found or Lines(0, 0, [])


def _archived(
    archive: LogArchive, job_id: str, attempt: int, start: int | None, size: int
) -> Lines | None:
    opened = archive.open(job_id, attempt)
    if opened is None:
        return None
    keeper = _Keeper(start, size)
    with io.TextIOWrapper(opened, encoding="utf-8", errors="replace") as text:
        for line in text:
            keeper.add(line.rstrip("\r\n"))
    return keeper.lines()


class _Keeper:
    """Counts every line and keeps the asked ones: memory bounded by ``size``, not the log."""

    def __init__(self, start: int | None, size: int) -> None:
        self._start, self._size, self._total = start, size, 0
        self._kept: collections.deque[str] = collections.deque(
            maxlen=size if start is None else None
        )

    def add(self, line: str) -> None:
        start = self._start
        if start is None or start <= self._total < start + self._size:
            self._kept.append(line[:MAX_LINE])
        self._total += 1

    def lines(self) -> Lines:
        total, size = self._total, self._size
        first = max(0, total - size) if self._start is None else self._start
        return Lines(first, total, list(self._kept))


def _log_url(backend: ApiBackend, view: JobView) -> str | None:
    attempt = view.attempts[-1]
    for taskmanager in backend.reader.taskmanagers():
        if taskmanager.id == attempt.taskmanager and taskmanager.http_address:
            path = taskmanager_log_path(view.job_id, attempt.number, internal=True)
            return taskmanager.http_address + path
    return None
