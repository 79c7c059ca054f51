"""The client's side of ``GET /v1/events``: a server-sent-events reader that outlives the
JobManager it reads from.

:class:`EventStream` opens the stream on the first JobManager that answers and yields its
``job`` and ``reset`` events (:mod:`steward.wire.events`). When that JobManager goes away (a
SIGKILL, a failover) or stays silent past three keep-alives, it opens the stream again on any
JobManager with ``Last-Event-ID``: the same JobManager replays what was missed, another one
answers ``reset``, on which the consumer re-reads the job with a GET. So a follower never
misses a terminal state. A JobManager that answers 404 (a version without events) raises
:class:`EventsUnsupportedError`: :meth:`steward.Client.wait` then polls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import httpx

from steward.errors import StewardError
from steward.wire.events import JOB_EVENT, MEDIA_TYPE, RESET_EVENT

from .failover import RequestTimeouts

log = logging.getLogger(__name__)

SILENCE = 45.0
"""Seconds without a byte (three default keep-alives) after which a stream is given up."""
_RETRY_DELAY = 0.2
_RETRYABLE = frozenset({502, 503, 504})

ErrorOf = Callable[[httpx.Response], StewardError]


class EventsUnsupportedError(Exception):
    """The JobManager has no ``/v1/events`` (an older version)."""


@dataclass(frozen=True)
class Event:
    name: str
    data: str
    id: str | None = None


class EventStream:
    """``/v1/events?<params>`` over ``addresses`` with ``http`` (the client's connections, TLS
    and token), reopened wherever it can be."""

    def __init__(
        self,
        http: httpx.Client,
        addresses: Sequence[str],
        params: dict[str, str],
        *,
        timeouts: RequestTimeouts,
        error_of: ErrorOf,
        silence: float = SILENCE,
    ) -> None:
        self._http = http
        self._addresses = addresses
        self._params = params
        self._timeouts = timeouts
        self._error_of = error_of
        self._silence = silence
        self.cursor: str | None = None
        """The last event's id: where a reopened stream resumes."""
        self.opened = 0
        """How many times a stream was opened (a failover shows as a second one)."""

    def events(self, deadline: float) -> Iterator[Event]:
        """``job`` and ``reset`` events until ``deadline`` (a :func:`time.monotonic` time);
        a ``reset`` is also yielded when no JobManager could be reached for a while, so the
        consumer re-reads (and its GET raises if the cluster stays unreachable)."""
        while time.monotonic() < deadline:
            response = self._open(deadline)
            if response is None:
                yield Event(RESET_EVENT, "{}")
                time.sleep(min(_RETRY_DELAY, max(deadline - time.monotonic(), 0)))
                continue
            try:
                for event in parse(_until(response.iter_lines(), deadline)):
                    if event.id is not None:
                        self.cursor = event.id
                    if event.name in (JOB_EVENT, RESET_EVENT):
                        yield event
            except httpx.TimeoutException:
                log.info("event stream silent, reopening it")
            except httpx.TransportError as exc:
                log.info("event stream lost (%s), reopening it elsewhere", type(exc).__name__)
            finally:
                response.close()

    def _open(self, deadline: float) -> httpx.Response | None:
        """The stream of the first JobManager that serves it; None if none did this round."""
        for address in list(self._addresses):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            headers = {"accept": MEDIA_TYPE}
            if self.cursor is not None:
                headers["last-event-id"] = self.cursor
            request = self._http.build_request(
                "GET",
                address + "/v1/events",
                params=self._params,
                headers=headers,
                timeout=httpx.Timeout(
                    min(self._silence, remaining),
                    connect=min(self._timeouts.connect, remaining),
                ),
            )
            try:
                response = self._http.send(request, stream=True)
            except httpx.TransportError:
                continue
            is_stream = response.headers.get("content-type", "").startswith(MEDIA_TYPE)
            if response.status_code == 200 and is_stream:
                self.opened += 1
                return response
            response.read()
            response.close()
            if response.status_code in _RETRYABLE:
                continue
            if response.status_code in (200, 404, 405):  # an older JobManager, or not Steward
                raise EventsUnsupportedError(address)
            raise self._error_of(response)
        return None


def parse(lines: Iterator[str]) -> Iterator[Event]:
    """Server-sent events from a stream's lines (the WHATWG framing; comments skipped)."""
    name, data, event_id = "message", list[str](), None
    for line in lines:
        if not line:
            if data:
                yield Event(name, "\n".join(data), event_id)
            name, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            event_id = value


def _until(lines: Iterator[str], deadline: float) -> Iterator[str]:
    """``lines`` until ``deadline``: a quiet job's stream never times out (its keep-alives
    come well within the read timeout), so the wait's deadline is checked at each line."""
    for line in lines:
        yield line
        if time.monotonic() >= deadline:
            return
