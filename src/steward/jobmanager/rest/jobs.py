"""``/v1/jobs``: submit, list, look up, cancel, and a terminated job's result.

Every route shows a caller only its teams' jobs (an admin every job; :mod:`.teams`): another
team's job is answered as an unknown id. Reads come from the leader's memory while it leads and
has recovered, else from ZooKeeper (:class:`~.backend.ClusterReads`). A listing pages through
the JobManager's in-memory index (:mod:`steward.jobmanager.job_index`); the leader brings the
live jobs of a page up to date from its memory, so its answer is exact, a standby's trails by
its watches' delay. Writes are the leader's, a standby forwards them. Any caller reads; a
submitter submits and cancels its own jobs, an admin cancels any
(:mod:`steward.security.roles`); each submit and cancel is a line of the audit log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool

from steward.errors import StewardError
from steward.jobmanager.indexed_job import IndexedJob
from steward.jobmanager.job_index import BadCursorError, JobIndex, JobQuery, decode_cursor
from steward.security import audit
from steward.security.identity import Identity
from steward.security.roles import Action
from steward.security.teams import TeamScope
from steward.sparkconf.event_log import history_server_url
from steward.wire.rest import ErrorBody, JobList, JobsQuery, JobView, ResultView, WaitQuery
from steward.wire.values import check_job_id

from .auth import Caller, client_address, require
from .backend import ApiBackend, LeaderTerm
from .errors import ApiError, raise_for
from .events import Feed, check_wait, long_poll, long_poll_headers
from .forwarding import forward, leading
from .history import with_history_links
from .jobs_submit import submission_route
from .state import Backend, Forwarder
from .teams import job_not_found, scope, sees, visible

router = APIRouter(tags=["jobs"])

MAX_PAGE_READS = 10
"""ZooKeeper reads a listing on the leader may make (jobs that ended since their last event)."""


@router.post(
    "/v1/jobs",
    status_code=201,
    responses={
        400: {"model": ErrorBody},
        403: {"model": ErrorBody},
        409: {"model": ErrorBody},
        413: {"model": ErrorBody},
        503: {"model": ErrorBody},
        504: {"model": ErrorBody, "description": "outcome_unknown: a standby's forward"},
        507: {"model": ErrorBody},
    },
)
async def submit(request: Request) -> Response:
    """Submit a job: a spec and the pipeline (a .py file or a zipped folder), base64."""
    # Documented here; answered before FastAPI's routing (.direct).
    return await submission_route(request)


@router.get("/v1/jobs", response_model=JobList, responses={400: {"model": ErrorBody}})
def jobs(caller: Caller, backend: Backend, params: Annotated[JobsQuery, Query()]) -> Response:
    """A page of jobs, newest first: live ones and those with a result.

    Without ``limit``, the newest 100 (at most 1000); ``next`` is the cursor of the following
    page (null on the last). Filters: ``state``, ``label`` (key=value), ``name`` (a prefix),
    ``submitter``, ``team``; a caller who is not an admin sees its teams' jobs only. A page
    may hold fewer jobs than ``limit`` and still have a ``next`` (a filter
    that rarely matches); in a listing, ``attempts`` holds only the latest attempt and
    ``env`` is null."""
    query = _job_query(params, scope(caller, backend, params.team))
    page = backend.reader.page(query) or JobIndex.of(_every_job(backend)).page(query)
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready:
        documents = _current(backend, dispatcher, page.jobs)
    else:
        documents = [job.document(backend.id) for job in page.jobs]
    answer = {"jobs": documents, "served_by": backend.id, "next": page.next, "counts": page.counts}
    # Serialised once, by pydantic-core's encoder, without building JobViews: a page of 1,000
    # in 5 ms where views and FastAPI's check of them took 50.
    return Response(to_json(answer), media_type="application/json")


def _job_query(params: JobsQuery, teams: TeamScope | None) -> JobQuery:
    try:
        after = None if params.cursor is None else decode_cursor(params.cursor)
    except BadCursorError as exc:
        raise ApiError(400, "bad_cursor", str(exc)) from None
    label = None
    if params.label is not None:
        key, _, value = params.label.partition("=")
        label = (key, value)
    return JobQuery(
        limit=params.limit,
        after=after,
        state=params.state,
        label=label,
        name_prefix=params.name,
        submitter=params.submitter,
        teams=teams,
    )


def _every_job(backend: ApiBackend) -> list[JobView]:
    """Every job read in full: only while the index is still being filled."""
    dispatcher = backend.dispatcher
    if dispatcher is None or not dispatcher.ready:
        return backend.reader.jobs()
    live = {view.job_id: view for view in dispatcher.views()}
    return [*live.values(), *(v for v in backend.reader.terminated() if v.job_id not in live)]


def _current(
    backend: ApiBackend, dispatcher: LeaderTerm, listed: list[IndexedJob]
) -> list[dict[str, object]]:
    """The leader's own views of the jobs the index shows live (its memory is ahead of its
    watches). One it no longer runs has ended since: read once, at most
    :data:`MAX_PAGE_READS` a page (a page never costs a read per job)."""
    current, reads = [], 0
    for job in listed:
        live = None
        if not job.state.is_terminal:
            live = dispatcher.view(job.job_id, with_checkpoints=False)
            if live is None and reads < MAX_PAGE_READS:
                reads += 1
                live = backend.reader.job(job.job_id)
                if live is not None:
                    backend.reader.note(live)
        if live is None:
            current.append(job.document(backend.id))
        else:
            update = {
                "attempts": live.attempts[-1:],
                "result": None,
                "progress": None,
                "env": None,
            }
            current.append(live.model_copy(update=update).model_dump(mode="json"))
    return current


@router.get("/v1/jobs/{job_id}", response_model=JobView, responses={404: {"model": ErrorBody}})
async def job(
    job_id: str,
    caller: Caller,
    backend: Backend,
    feed: Feed,
    query: Annotated[WaitQuery, Query()],
) -> Response:
    """A job's state, attempts (TaskManager, epoch, start, end, cause) and checkpoints.

    With ``wait``, a long poll: answers as soon as the job differs from ``since``, or after
    ``wait`` seconds (:mod:`.events`)."""
    job_id = _known_form(job_id)
    wait, since = query.wait, query.since
    if check_wait(wait) is None:
        view = await run_in_threadpool(_job_view, backend, job_id, caller)
        view = with_history_links(view, history_server_url(backend.config.settings.history))
        return JSONResponse(view.model_dump(mode="json"))
    view, waited = await long_poll(
        feed, job_id, wait or 0.0, since, lambda: _job_view(backend, job_id, caller)
    )
    view = with_history_links(view, history_server_url(backend.config.settings.history))
    return JSONResponse(view.model_dump(mode="json"), headers=long_poll_headers(waited))


@router.post(
    "/v1/jobs/{job_id}/cancel",
    status_code=202,
    responses={403: {"model": ErrorBody}, 404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def cancel(
    job_id: str, request: Request, caller: Caller, backend: Backend, forwarder: Forwarder
) -> Response:
    """Cancel a job: its running attempt gets SIGTERM, then SIGKILL after a grace period.

    An admin cancels any job, a submitter only those it submitted (403 otherwise)."""
    where = client_address(request)
    if not caller.may(Action.CANCEL_OWN):
        audit.record("job.cancel", caller, client=where, outcome="denied", job_id=job_id[:200])
        require(caller, Action.CANCEL_OWN)
    _known_form(job_id)
    dispatcher = leading(backend)
    if dispatcher is None:
        return forward(backend, forwarder, request, b"")
    if not caller.may(Action.CANCEL_ANY):
        _check_owner(caller, _job_view(backend, job_id, caller), where)
    try:
        try:
            view = dispatcher.cancel(job_id)
        except StewardError as exc:
            raise_for(exc)
    except ApiError as refused:
        audit.record("job.cancel", caller, client=where, outcome=str(refused.status), job_id=job_id)
        raise
    audit.record("job.cancel", caller, client=where, job_id=job_id)
    backend.reader.note(view)
    return JSONResponse(view.model_dump(mode="json"), status_code=202)


def _check_owner(caller: Identity, view: JobView, where: str | None) -> None:
    """403 unless ``caller`` submitted this job."""
    if view.submitter is not None and view.submitter == caller.name:
        return
    audit.record("job.cancel", caller, client=where, outcome="denied", job_id=view.job_id)
    raise ApiError(
        403,
        "forbidden",
        f"{caller.name} may cancel only the jobs it submitted; job {view.job_id!r} was"
        f" submitted by {view.submitter or 'an unknown submitter'}",
    )


@router.get(
    "/v1/jobs/{job_id}/result",
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def result(job_id: str, caller: Caller, backend: Backend) -> ResultView:
    """A terminated job's outcome, from the JobResultStore (outlives the job's cleanup)."""
    entry = backend.reader.result(_known_form(job_id))
    if entry is not None:
        if not sees(caller, backend, entry.team):
            raise job_not_found(job_id)
        return ResultView.of(entry)
    view = _job_view(backend, job_id, caller)
    raise ApiError(
        409,
        "job_not_terminated",
        f"job {job_id!r} has not terminated yet (state {view.state.value})",
    )


async def _run_sync(work: Callable[[], Response]) -> Response:
    result: Response = await run_in_threadpool(work)
    return result


def _known_form(job_id: str) -> str:
    """``job_id`` if it could name a job; any other string names no job (404, not 500)."""
    try:
        return check_job_id(job_id)
    except ValueError:
        raise ApiError(404, "job_not_found", f"no job {job_id[:200]!r}") from None


def _job_view(backend: ApiBackend, job_id: str, caller: Identity) -> JobView:
    """The job's view, if ``caller`` may see it; else the 404 of an unknown id."""
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready:
        view = dispatcher.view(job_id)
        if view is not None:
            return visible(caller, backend, view)
    found = backend.reader.job(job_id)
    if found is None:
        raise job_not_found(job_id)
    return visible(caller, backend, found)
