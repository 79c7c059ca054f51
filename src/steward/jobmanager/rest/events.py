"""``GET /v1/events`` (a server-sent-events stream of job state changes) and the long poll of
``GET /v1/jobs/{id}?wait=``: how followers (the CLI, ``Client.wait``, the web UI) learn of
changes without polling.

Every JobManager serves both, standbys too, from its own :class:`Journal` (fed by ZooKeeper
watches, :mod:`steward.jobmanager.events.source`). The framing and the reset rule are
:mod:`steward.wire.events`'s. Any authenticated caller may read (viewer and up, like every
read), and is streamed its teams' jobs' events only (an admin every job's: :mod:`.teams`). A
stream outlives the request that authenticated it, so the token is verified again at every
keep-alive (the authenticator's cache, then ZooKeeper): a revoked or expired token ends the
stream within ``jobmanager.events.keep-alive`` plus the token cache's lifetime. A client
certificate is checked once, by the TLS handshake.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from steward.errors import StewardError
from steward.jobmanager.events.journal import Journal
from steward.security.asgi import bearer_token, cookie_token
from steward.security.identity import Identity
from steward.security.teams import TeamScope
from steward.wire.events import (
    JOB_EVENT,
    LONG_POLL_HEADER,
    MAX_LONG_POLL,
    MEDIA_TYPE,
    RESET_EVENT,
    EventsQuery,
    JobEvent,
    ResetEvent,
    comment,
    frame,
)
from steward.wire.rest import ErrorBody, JobView
from steward.wire.states import JobState
from steward.wire.values import check_job_id

from .auth import Caller
from .errors import ApiError
from .state import Backend, Security
from .teams import scope

log = logging.getLogger(__name__)
router = APIRouter(tags=["events"])

DEFAULT_KEEP_ALIVE = 15.0


@dataclass(frozen=True)
class EventFeed:
    """The journal the routes read, and how often an idle stream gets a keep-alive."""

    journal: Journal = field(default_factory=Journal)
    keep_alive: float = DEFAULT_KEEP_ALIVE


def install(app: FastAPI, feed: EventFeed) -> None:
    app.state.event_feed = feed


async def _feed(request: Request) -> EventFeed:
    feed: EventFeed = request.app.state.event_feed
    return feed


Feed = Annotated[EventFeed, Depends(_feed)]


@router.get(
    "/v1/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {MEDIA_TYPE: {}}, "description": "the stream (see steward.wire.events)"},
        400: {"model": ErrorBody},
    },
)
async def events(
    request: Request,
    *,
    caller: Caller,
    feed: Feed,
    security: Security,
    backend: Backend,
    query: Annotated[EventsQuery, Query()],
    last_event_id: Annotated[str | None, Header(alias="last-event-id")] = None,
) -> StreamingResponse:
    """Job state changes as server-sent events: ``event: job`` with a JobEvent, ``event:
    reset`` when the consumer must re-read with a GET (at the start of a stream that does not
    resume), and a comment line every ``jobmanager.events.keep-alive``."""
    matches = _filter(query.job, query.state, scope(caller, backend))

    async def still_allowed() -> bool:
        return await _still_allowed(request, caller, security.authenticator.verify)

    stream = _stream(feed, last_event_id, matches, still_allowed)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream, media_type=MEDIA_TYPE, headers=headers)


async def _stream(
    feed: EventFeed,
    last_event_id: str | None,
    matches: Callable[[JobEvent], bool],
    still_allowed: Callable[[], Awaitable[bool]],
) -> AsyncIterator[bytes]:
    journal = feed.journal
    with journal.waiting() as waiter:
        cursor = last_event_id.strip() if last_event_id else None
        why = "new" if cursor is None else "cannot-replay"
        while not journal.closed:
            replay = journal.read(cursor) if cursor is not None else None
            if replay is None:
                cursor = journal.head
                reset = ResetEvent(cursor=cursor, why=why).model_dump_json()
                yield frame(RESET_EVENT, reset, cursor)
                why = "missed-changes"
                continue
            for entry in replay.entries:
                if matches(entry.event):
                    yield frame(JOB_EVENT, entry.event.model_dump_json(), entry.cursor)
            cursor = replay.cursor
            if not await waiter.wait(feed.keep_alive):
                if not await still_allowed():
                    return
                yield comment("keep-alive")


async def _still_allowed(
    request: Request, caller: Identity, verify: Callable[[str], Identity | None]
) -> bool:
    """Whether the credential that opened the stream is still good (a certificate, or auth
    being off, is not re-checked)."""
    if caller.token_id is None:
        return True
    token = bearer_token(request.scope) or cookie_token(request.scope)
    if token is None:
        return False
    try:
        identity = await anyio.to_thread.run_sync(verify, token)
    except StewardError as exc:  # ZooKeeper cannot tell now: end it; a reconnect is asked anew
        log.warning("cannot verify an event stream's token: %s", exc)
        return False
    return identity is not None and identity.token_id == caller.token_id


def _filter(
    job: str | None, states: list[str] | None, teams: TeamScope | None
) -> Callable[[JobEvent], bool]:
    """The stream's filter (only ``teams``' jobs, if given); 400 for a job id or a state that
    cannot exist."""
    if job is not None:
        try:
            check_job_id(job)
        except ValueError as exc:
            raise ApiError(400, "bad_request", f"job: {exc}") from None
    wanted: set[JobState] = set()
    for word in (part.strip() for value in states or [] for part in value.split(",")):
        if not word:
            continue
        try:
            wanted.add(JobState(word.upper()))
        except ValueError:
            known = ", ".join(s.value for s in JobState)
            raise ApiError(
                400, "bad_request", f"state: unknown state {word[:40]!r} (one of {known})"
            ) from None

    def matches(event: JobEvent) -> bool:
        if teams is not None and not teams.sees(event.team):
            return False
        return (job is None or event.job_id == job) and (not wanted or event.state in wanted)

    return matches


# ---------------------------------------------------------------------- long poll


def check_wait(wait: float | None) -> float | None:
    """``wait`` if it is a number of seconds in [0, MAX_LONG_POLL]; 400 otherwise."""
    if wait is not None and not 0 <= wait <= MAX_LONG_POLL:
        raise ApiError(
            400, "bad_request", f"wait: between 0 and {MAX_LONG_POLL:g} seconds, not {wait:g}"
        )
    return wait


async def long_poll(
    feed: EventFeed, job_id: str, wait: float, since: str | None, view_of: Callable[[], JobView]
) -> tuple[JobView, float]:
    """The job's view as soon as it differs from ``since`` (a state, or the ``updated_at``
    the caller has), or after ``wait`` seconds; and how long it waited."""
    differs = _differs(since)
    started = time.monotonic()
    deadline = started + wait
    journal = feed.journal
    with journal.waiting() as waiter:
        cursor = journal.head
        view = await run_in_threadpool(view_of)
        while not differs(view) and not journal.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if not await waiter.wait(remaining):
                continue  # uvloop's timers count whole milliseconds and can fire early
            replay = journal.read(cursor)
            cursor = journal.head if replay is None else replay.cursor
            if replay is None or any(e.event.job_id == job_id for e in replay.entries):
                view = await run_in_threadpool(view_of)
    return view, time.monotonic() - started


def _differs(since: str | None) -> Callable[[JobView], bool]:
    if since is None or not since.strip():
        return lambda _view: True
    try:
        version = float(since)
    except ValueError:
        try:
            state = JobState(since.strip().upper())
        except ValueError:
            known = ", ".join(s.value for s in JobState)
            raise ApiError(
                400,
                "bad_request",
                f"since: a state ({known}) or the updated_at you have, not {since[:40]!r}",
            ) from None
        return lambda view: view.state is not state
    return lambda view: view.updated_at != version


def long_poll_headers(waited: float) -> dict[str, str]:
    return {LONG_POLL_HEADER: f"{waited:.3f}"}
