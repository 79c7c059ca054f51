"""``Client.wait``: until a job terminates, by its live events (one request per change, none
while nothing happens; a failover is ridden out by :mod:`steward.client.events`), or, against
a JobManager without events (it answers 404), by polling."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from steward.client.events import EventStream, EventsUnsupportedError
from steward.client.failover import Failover, error_body
from steward.client.responses import api_error, job_path
from steward.errors import WaitTimeoutError
from steward.wire.events import JOB_EVENT, RESET_EVENT, JobEvent
from steward.wire.rest import JobView, ResultView

log = logging.getLogger(__name__)

_sleep = time.sleep  # tests replace it to poll without waiting


class Reads(Protocol):
    """What waiting reads of the client."""

    def job(self, job_id: str) -> JobView: ...

    def result(self, job_id: str) -> ResultView: ...


def wait(
    client: Reads,
    failover: Failover,
    job_id: str,
    *,
    timeout: float | None,
    poll: float,
    on_update: Callable[[JobView], None] | None,
) -> ResultView:
    """See :meth:`steward.client.Client.wait`."""
    deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
    job_path(job_id)  # checks the id before it reaches a URL
    try:
        return _wait_on_events(client, failover, job_id, deadline, on_update)
    except EventsUnsupportedError as old:
        log.info("no live events at %s: polling job=%s", old, job_id)
    except WaitTimeoutError:
        pass
    return _poll(client, job_id, deadline, timeout=timeout, poll=poll, on_update=on_update)


def _wait_on_events(
    client: Reads,
    failover: Failover,
    job_id: str,
    deadline: float,
    on_update: Callable[[JobView], None] | None,
) -> ResultView:
    stream = EventStream(
        failover.http,
        failover.addresses,
        {"job": job_id},
        timeouts=failover.request_timeouts,
        error_of=lambda response: api_error(response, error_body(response), job_id),
    )
    for event in stream.events(deadline):
        terminal = False
        if event.name == JOB_EVENT:
            terminal = JobEvent.model_validate_json(event.data).state.is_terminal
        if event.name == RESET_EVENT or terminal or on_update is not None:
            view = client.job(job_id)
            if on_update is not None:
                on_update(view)
            if view.state.is_terminal:
                return view.result if view.result is not None else client.result(job_id)
    raise WaitTimeoutError(f"job {job_id!r} has not terminated yet")


def _poll(
    client: Reads,
    job_id: str,
    deadline: float,
    *,
    timeout: float | None,
    poll: float,
    on_update: Callable[[JobView], None] | None,
) -> ResultView:
    """The fallback: GET the job every ``poll`` seconds until it terminates."""
    while True:
        view = client.job(job_id)
        if on_update is not None:
            on_update(view)
        if view.state.is_terminal:
            return view.result if view.result is not None else client.result(job_id)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeoutError(f"job {job_id!r} is still {view.state} after {timeout}s")
        _sleep(min(poll, remaining))
