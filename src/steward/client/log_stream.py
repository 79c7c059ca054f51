"""An attempt's log as an iterator of byte blocks, from whichever JobManager answers.

:meth:`steward.Client.log` opens ``GET /v1/jobs/{id}/attempts/{n}/log`` on the first
JobManager that answers (trying each address, as :class:`~.failover.Failover` does, until the
client's timeout) and hands out the bytes as they come. If that JobManager goes away in the
middle (a failover, say), the stream is opened again on another one from the byte after the
last one received (the answer's ``x-steward-log-start`` says where a stream started), so a
follower sees every byte once. What the cluster refuses (no such job or attempt, a log the
retention removed, a TaskManager gone) is raised as the API's error at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

import httpx

from steward.errors import ClusterUnreachableError, StewardError
from steward.wire.logs import START_HEADER, LogQuery, job_log_path

from .failover import Failover, RequestTimeouts, error_body
from .responses import api_error

_RETRY_DELAY = 0.5
_MAX_CUTS = 5
"""Streams broken in a row before a byte came: then the error is raised."""
_RETRYABLE = frozenset({502, 503, 504})

ErrorOf = Callable[[httpx.Response], StewardError]
"""The API error an answer that is not the log means."""


class LogStream:
    """Opens and reopens one log over ``addresses`` with ``http`` (the client's connections,
    TLS and token)."""

    def __init__(
        self,
        http: httpx.Client,
        addresses: Sequence[str],
        path: str,
        *,
        timeout: float,
        timeouts: RequestTimeouts,
        error_of: ErrorOf,
    ) -> None:
        self._http = http
        self._addresses = list(addresses)
        self._path = path
        self._timeout = timeout
        self._timeouts = timeouts
        self._error_of = error_of

    def blocks(self, query: LogQuery) -> Iterator[bytes]:
        """The log's bytes; opens the stream now, so a refusal is raised by this call."""
        response = self._open(query)
        return self._relay(response, query)

    def _relay(self, response: httpx.Response, query: LogQuery) -> Iterator[bytes]:
        cuts = 0
        while True:
            start = _start(response, query.offset)
            received = 0
            try:
                for block in response.iter_bytes():
                    received += len(block)
                    yield block
                return
            except httpx.TransportError as exc:
                # That JobManager went away: go on from the next byte, asking it last.
                cuts = 0 if received else cuts + 1
                if cuts > _MAX_CUTS:
                    raise ClusterUnreachableError(f"the log's stream broke: {exc}") from None
                cut = str(response.url.copy_with(path="/", query=None)).rstrip("/")
                if cut in self._addresses:
                    self._addresses.remove(cut)
                    self._addresses.append(cut)
            finally:
                response.close()
            query = LogQuery(offset=start + received, follow=query.follow)
            response = self._open(query)

    def _open(self, query: LogQuery) -> httpx.Response:
        deadline = time.monotonic() + self._timeout
        failures: dict[str, str] = {}
        while True:
            for address in list(self._addresses):
                try:
                    response = self._http.send(self._request(address, query), stream=True)
                except httpx.TransportError as exc:
                    failures[address] = f"{type(exc).__name__}: {exc}" if str(exc) else "failed"
                    continue
                if response.status_code == 200:
                    return response
                response.read()
                response.close()
                code = error_body(response).code
                # Another JobManager cannot do better when the TaskManager is the problem.
                if response.status_code in _RETRYABLE and not code.startswith("taskmanager_"):
                    failures[address] = f"{response.status_code} {code}"
                    continue
                raise self._error_of(response)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                tried = "; ".join(f"{address}: {why}" for address, why in failures.items())
                raise ClusterUnreachableError(
                    f"no JobManager served the log within {self._timeout:g}s ({tried})"
                )
            time.sleep(min(_RETRY_DELAY, remaining))

    def _request(self, address: str, query: LogQuery) -> httpx.Request:
        # A followed log may be quiet for as long as the attempt prints nothing.
        read = None if query.follow else self._timeouts.answer
        return self._http.build_request(
            "GET",
            address + self._path,
            params=query.params(),
            timeout=httpx.Timeout(read, connect=self._timeouts.connect),
        )


def _start(response: httpx.Response, default: int) -> int:
    try:
        return int(response.headers.get(START_HEADER, default))
    except ValueError:
        return default


def attempt_log(failover: Failover, job_id: str, attempt: int, query: LogQuery) -> Iterator[bytes]:
    """Attempt ``attempt`` of ``job_id``'s log, as :meth:`LogStream.blocks` gives it, from any
    of ``failover``'s JobManagers; refusals raised as the client's errors."""
    stream = LogStream(
        failover.http,
        failover.addresses,
        job_log_path(job_id, attempt),
        timeout=failover.timeout,
        timeouts=failover.request_timeouts,
        error_of=lambda response: api_error(response, error_body(response), job_id),
    )
    return stream.blocks(query)
