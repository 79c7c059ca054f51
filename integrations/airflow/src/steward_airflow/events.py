"""Following a job to its end over ``GET /v1/events`` (server-sent events), asynchronously.

One long request per JobManager, a few bytes per change, nothing while the job runs quietly:
this is what the deferred operator's trigger awaits in Airflow's triggerer, instead of a task
holding a worker slot in a poll loop. The stream is read with the job's filter
(``?job=<id>``); a ``job`` event with a terminal state ends the wait; a ``reset`` (every
stream opens with one unless it resumes, and a JobManager that cannot replay answers one) is
followed by a read of the job. A stream that drops (its JobManager killed, a failover) or stays
silent past three keep-alives is reopened on the next JobManager with ``Last-Event-ID``, and the
job is read again first, so a terminal state is never missed. A JobManager without the route
(404) is polled every ``poll`` seconds instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from steward_airflow.api import TERMINAL, StewardApi

log = logging.getLogger(__name__)

SILENCE = 45.0
"""Seconds without a byte (three of the server's keep-alives) after which a stream is dropped."""
MEDIA_TYPE = "text/event-stream"
_REOPEN_DELAY = 0.5


@dataclass(frozen=True)
class Event:
    name: str
    data: str
    id: str | None = None


async def follow(
    api: StewardApi,
    job_id: str,
    *,
    poll: float = 5.0,
    silence: float = SILENCE,
    on_change: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The job's view once it is terminal (FINISHED, FAILED or CANCELED); ``on_change`` gets
    the job's view, or a ``job`` event, at each change."""
    reader = _Reader(api, job_id, on_change)
    cursor: str | None = None
    while True:
        view = await reader.read()
        if view is not None:
            return view
        try:
            async for event in _stream(api, job_id, cursor, silence):
                cursor = event.id or cursor
                if event.name == "reset" or _terminal(event):
                    view = await reader.read()
                    if view is not None:
                        return view
                elif event.name == "job" and on_change is not None:
                    on_change(json.loads(event.data))
        except _NoEventsError:
            await asyncio.sleep(poll)
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            log.info("event stream lost job=%s error=%s, reopening", job_id, type(exc).__name__)
            api.addresses.append(api.addresses.pop(0))
            await asyncio.sleep(_REOPEN_DELAY)


class _Reader:
    """Reads the job (``GET``), telling ``on_change`` when its state moved."""

    def __init__(
        self, api: StewardApi, job_id: str, on_change: Callable[[dict[str, Any]], None] | None
    ) -> None:
        self.api, self.job_id, self.on_change = api, job_id, on_change
        self.state: str | None = None

    async def read(self) -> dict[str, Any] | None:
        """The job's view if it is terminal, else None."""
        view = await self.api.job(self.job_id)
        if self.on_change is not None and view.get("state") != self.state:
            self.on_change(view)
        self.state = view.get("state")
        return view if self.state in TERMINAL else None


class _NoEventsError(Exception):
    """The JobManager has no ``/v1/events``: poll instead."""


async def _stream(
    api: StewardApi, job_id: str, cursor: str | None, silence: float
) -> AsyncIterator[Event]:
    headers = {"accept": MEDIA_TYPE}
    if cursor is not None:
        headers["last-event-id"] = cursor
    url = api.addresses[0] + "/v1/events"
    timeout = httpx.Timeout(silence, connect=10.0)
    async with api.http.stream(
        "GET", url, params={"job": job_id}, headers=headers, timeout=timeout
    ) as response:
        if response.status_code in (404, 405):
            raise _NoEventsError
        if response.status_code != 200 or not response.headers.get("content-type", "").startswith(
            MEDIA_TYPE
        ):
            await response.aread()
            raise httpx.TransportError(f"events answered {response.status_code}")
        async for event in parse(response.aiter_lines()):
            yield event


def _terminal(event: Event) -> bool:
    if event.name != "job":
        return False
    try:
        return json.loads(event.data).get("state") in TERMINAL
    except (ValueError, AttributeError):
        return False


async def parse(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    """Server-sent events from a stream's lines (WHATWG framing; comments skipped)."""
    name, data, event_id = "message", list[str](), None
    async for line in lines:
        if not line:
            if data:
                yield Event(name, "\n".join(data), event_id)
            name, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
        elif key == "id":
            event_id = value
