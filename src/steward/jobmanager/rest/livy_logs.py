"""The log lines of a Livy batch: its latest attempt's log, read from the TaskManager that ran
it through the JobManager's log proxy (:mod:`.logs`).

A batch's own view carries its last :data:`~steward.wire.livy.LOG_TAIL` lines (the
TaskManager sends just those); ``GET /batches/{id}/log`` pages by line as Livy does, which
needs the line count: the log is streamed once and only the asked lines are kept. A log that
cannot be read (no attempt yet, its TaskManager gone) is no lines, never an error: a Livy
client polls a batch's view and must not fail on it.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass

import httpx
from fastapi import Request

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
    url = _log_url(backend, view)
    if url is None:
        return Lines(0, 0, [])
    proxy: LogProxy = request.app.state.log_proxy
    params = {"offset": "0", "follow": "false"} | ({"tail": str(tail)} if tail else {})
    try:
        async with proxy.client().stream("GET", url, params=params, timeout=_TIMEOUT) as answer:
            if answer.status_code != 200:
                return Lines(0, 0, [])
            return await _kept(answer, start, size)
    except httpx.HTTPError as exc:
        log.info("batch log unreadable job=%s error=%s", view.job_id, exc)
        return Lines(0, 0, [])


async def _kept(answer: httpx.Response, start: int | None, size: int) -> Lines:
    """Count every line, keep the asked ones: memory bounded by ``size``, not the log."""
    kept: collections.deque[str] = collections.deque(maxlen=size if start is None else None)
    total = 0
    async for line in answer.aiter_lines():
        if start is None or start <= total < start + size:
            kept.append(line[:MAX_LINE])
        total += 1
    first = max(0, total - size) if start is None else start
    return Lines(first, total, list(kept))


def _log_url(backend: ApiBackend, view: JobView) -> str | None:
    if not view.attempts:
        return None
    attempt = view.attempts[-1]
    for taskmanager in backend.reader.taskmanagers():
        if taskmanager.id == attempt.taskmanager and taskmanager.http_address:
            path = taskmanager_log_path(view.job_id, attempt.number, internal=True)
            return taskmanager.http_address + path
    return None
