"""Sending one request to whichever JobManager answers: the client's failover.

Any JobManager answers REST (standbys serve reads and forward writes), so :class:`Failover`
keeps a list of addresses: on a connection error, a timeout or a 502/503/504 it tries the next
one, and when a whole round failed it waits (exponential backoff, at least the server's
``Retry-After``), looks the addresses up again if it can, and tries them all again, until its
timeout. The address that answered last is tried first next time.

A 429 (a rate limit) is waited out for a request that may be sent again: an idempotent
method, or a submission (``POST /v1/jobs`` and ``/v1/jobs/batch``: the same body is the same
submission, so a retry never makes a second job). It waits the server's ``Retry-After`` (at
least the backoff's delay), jittered so that many limited clients do not come back at once,
and never past the request's timeout: a wait that would end after it returns the 429 at once.
Other requests get their 429 as it came.

It also reports whether an earlier attempt of a request may have reached a JobManager (anything
but a refused connection or a ``no_leader`` answer; a standby's ``outcome_unknown`` says its
forward was sent and not answered), which is what lets the client tell its own retried
submission from somebody else's job.

An ``https://`` JobManager is verified with ``tls`` (``rest.ssl.ca``, else the system's CAs;
:mod:`steward.tls.contexts`). A certificate that cannot be verified is not a transient failure:
when a whole round got no answer and some address failed so, the request ends at once with an
error naming ``rest.ssl.ca`` instead of retrying until the timeout.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from steward.errors import ClusterUnreachableError, NoLeaderError, StewardError
from steward.tls.contexts import ClientTls, client_tls
from steward.wire.rest import ErrorBody
from steward.wire.values import STORED

log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({502, 503, 504})
TOO_MANY_REQUESTS = 429
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
SUBMISSION_PATHS = frozenset({"/v1/jobs", "/v1/jobs/batch"})
"""Submissions, idempotent by body (the leader answers a retry of the same body as the same
submission)."""
MAX_URLS = 256
"""Parsed URLs a client keeps (most paths name one job: a client that reads many starts
afresh past this)."""
RATE_LIMIT_JITTER = 0.25
"""A limited request waits its Retry-After times 1 to 1.25."""
# Connection failures that prove the request never reached a server.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
_sleep = time.sleep  # tests replace it to run the backoff without waiting

Rediscover = Callable[[float], list[str]]
"""Looks the addresses up again, within the given seconds."""


@dataclass(frozen=True)
class Backoff:
    """Waits between rounds over every address: ``initial``, times ``multiplier``, capped."""

    initial: float = 0.2
    maximum: float = 2.0
    multiplier: float = 2.0

    def after(self, delay: float) -> float:
        return min(delay * self.multiplier, self.maximum)


@dataclass(frozen=True)
class RequestTimeouts:
    """Per request: how long to wait for a connection, and for the whole answer."""

    connect: float = 3.0
    answer: float = 15.0


DEFAULT_BACKOFF = Backoff()
DEFAULT_REQUEST_TIMEOUTS = RequestTimeouts()


class Failover:
    """An ``httpx.Client`` over several JobManager addresses; see the module docstring."""

    def __init__(
        self,
        addresses: Sequence[str],
        *,
        timeout: float,
        transport: httpx.BaseTransport | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        request_timeouts: RequestTimeouts = DEFAULT_REQUEST_TIMEOUTS,
        rediscover: Rediscover | None = None,
        tls: ClientTls | None = None,
        token: str | None = None,
    ) -> None:
        if not addresses:
            raise ClusterUnreachableError("no JobManager address to talk to")
        self.addresses = list(addresses)
        self.timeout = timeout
        self.rediscover = rediscover
        self._backoff = backoff
        self._request_timeouts = request_timeouts
        self._tls = tls or client_tls()
        self._urls: dict[tuple[str, str], httpx.URL] = {}
        self._http = httpx.Client(
            transport=transport,
            follow_redirects=False,
            verify=self._tls.context,
            # The bearer token, if any: on every request (steward.security.credentials).
            headers={"authorization": f"Bearer {token}"} if token else None,
        )

    @property
    def http(self) -> httpx.Client:
        """The client's connections, with its TLS and token: for streams (events, logs)."""
        return self._http

    @property
    def request_timeouts(self) -> RequestTimeouts:
        return self._request_timeouts

    def close(self) -> None:
        self._http.close()

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content: Callable[[], Iterable[bytes]] | None = None,
    ) -> tuple[httpx.Response, bool]:
        """The first answer that is not "unavailable", and whether an earlier attempt may have
        been carried out; :class:`ClusterUnreachableError` or :class:`NoLeaderError` after the
        timeout.

        ``body`` is sent as JSON (bytes: already serialised, sent as they are, the same on
        every try); ``content`` instead streams a raw body, opened anew (called) for every try,
        so a large file is never held in memory and can be sent again."""
        deadline = time.monotonic() + self.timeout
        delay = self._backoff.initial
        failures: dict[str, str] = {}
        maybe_accepted = False
        unavailable: httpx.Response | None = None
        untrusted: StewardError | None = None
        may_repeat = repeatable(method, path)
        while True:
            retry_after = 0.0
            limited: httpx.Response | None = None
            for address in list(self.addresses):
                remaining = deadline - time.monotonic()
                if remaining <= 0 and failures:
                    break
                try:
                    response = self._http.request(
                        method,
                        self._url(address, path),
                        timeout=self._timeouts(remaining),
                        **_payload(body, content),
                    )
                except httpx.TransportError as exc:
                    failures[address] = _describe(exc, address)
                    maybe_accepted |= not isinstance(exc, _NOT_SENT)
                    untrusted = untrusted or self._tls.untrusted(address, exc)
                    continue
                if response.status_code == TOO_MANY_REQUESTS and may_repeat:
                    # The limit is the caller's, wherever it asks: wait, not the next address.
                    limited = response
                    retry_after = rate_limit_wait(response, delay)
                    break
                if response.status_code not in _RETRYABLE_STATUS:
                    self._prefer(address)
                    return response, maybe_accepted
                unavailable = response
                code = error_body(response).code
                failures[address] = f"{response.status_code} {code}"
                maybe_accepted |= code != "no_leader"
                retry_after = max(retry_after, retry_after_seconds(response))
            if untrusted is not None:
                raise untrusted
            remaining = deadline - time.monotonic()
            if limited is not None and retry_after >= remaining:
                return limited, maybe_accepted  # waiting it out would pass the deadline
            if limited is not None:
                log.info(
                    "rate limited, retrying method=%s path=%s wait=%.2fs", method, path, retry_after
                )
            if remaining <= 0:
                raise _gave_up(self.timeout, failures, unavailable)
            _sleep(min(max(delay, retry_after), remaining))
            delay = self._backoff.after(delay)
            self._refresh(deadline - time.monotonic())

    def _url(self, address: str, path: str) -> httpx.URL:
        """``address + path``, parsed once: a burst of submissions asks the same URL each
        time, and httpx's parse of a string was a fifth of its CPU per request."""
        url = self._urls.get((address, path))
        if url is None:
            if len(self._urls) >= MAX_URLS:
                self._urls.clear()
            url = self._urls[(address, path)] = httpx.URL(address + path)
        return url

    def _timeouts(self, remaining: float) -> httpx.Timeout:
        remaining = max(remaining, 0.1)
        limits = self._request_timeouts
        return httpx.Timeout(min(limits.answer, remaining), connect=min(limits.connect, remaining))

    def _prefer(self, address: str) -> None:
        if self.addresses[0] != address:
            self.addresses.remove(address)
            self.addresses.insert(0, address)

    def _refresh(self, remaining: float) -> None:
        """Look the addresses up again (JobManagers may have moved), keeping the old on error."""
        if self.rediscover is None or remaining <= 0:
            return
        try:
            found = self.rediscover(min(remaining, 2.0))
        except StewardError as exc:
            log.debug("rediscovery failed: %s", exc)
            return
        known = [address for address in self.addresses if address in found]
        self.addresses = known + [address for address in found if address not in known]


def _payload(body: Any, content: Callable[[], Iterable[bytes]] | None) -> dict[str, Any]:
    if content is not None:
        return {"content": content()}
    if isinstance(body, bytes):
        return {"content": body, "headers": {"content-type": "application/json"}}
    return {"json": body}


def error_body(response: httpx.Response) -> ErrorBody:
    """The response's ErrorBody; a body that is not one (a proxy's page) becomes one. Fields a
    newer JobManager added are ignored, as in everything another Steward process wrote."""
    try:
        return ErrorBody.model_validate_json(response.content, extra="ignore", context=STORED)
    except ValidationError:
        text = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
        message = f"HTTP {response.status_code} {response.reason_phrase}" + (
            f": {text}" if text else ""
        )
        return ErrorBody(code=f"http_{response.status_code}", message=message)


def repeatable(method: str, path: str) -> bool:
    """Whether a request may be sent again after a 429: idempotent, or a submission."""
    method = method.upper()
    route = path.split("?", 1)[0]
    return method in _IDEMPOTENT_METHODS or (method == "POST" and route in SUBMISSION_PATHS)


def rate_limit_wait(response: httpx.Response, delay: float) -> float:
    """How long to wait before asking again after a 429: its Retry-After (at least ``delay``),
    jittered."""
    wait = max(retry_after_seconds(response), delay)
    return wait * (1.0 + random.uniform(0.0, RATE_LIMIT_JITTER))


def retry_after_seconds(response: httpx.Response) -> float:
    """The Retry-After header in seconds (0 when absent or not a number of seconds)."""
    try:
        return max(float(response.headers.get("retry-after", "0")), 0.0)
    except ValueError:
        return 0.0


def _gave_up(
    timeout: float, failures: Mapping[str, str], unavailable: httpx.Response | None
) -> StewardError:
    tried = "; ".join(f"{address}: {why}" for address, why in failures.items())
    if unavailable is not None and error_body(unavailable).code == "outcome_unknown":
        return ClusterUnreachableError(
            f"{error_body(unavailable).message} (no answer after {timeout:g}s; tried {tried})"
        )
    if unavailable is not None and error_body(unavailable).code == "no_leader":
        message = error_body(unavailable).message
        return NoLeaderError(
            f"{message} (still no leader after {timeout:g}s; tried {tried})",
            retry_after=retry_after_seconds(unavailable) or None,
        )
    return ClusterUnreachableError(
        f"no JobManager answered within {timeout:g}s ({tried}); is the cluster running?"
        " (steward cluster status)"
    )


def _describe(exc: httpx.TransportError, address: str = "") -> str:
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError) and address.startswith(
        "http://"
    ):
        # What a plain-http request to a TLS port gets: the server drops the connection.
        return f"{exc} (if it serves HTTPS, use https://{address.removeprefix('http://')})"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in str(exc).lower() else f"cannot connect ({exc})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
