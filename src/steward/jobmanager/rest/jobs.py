"""``/v1/jobs``: submit, list, look up, cancel, and a terminated job's result.

Reads come from the leader's memory while it leads and has recovered, else from ZooKeeper
(:class:`~.backend.ClusterReads`); writes are the leader's, a standby forwards them.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from steward.errors import StewardError
from steward.wire.rest import ErrorBody, JobList, JobView, ResultView
from steward.wire.values import check_job_id

from .backend import ApiBackend
from .errors import ApiError, raise_for
from .forwarding import forward, leading
from .state import Backend, Contents, Forwarder
from .submission import MAX_SUBMISSION_BYTES, bounded_body
from .submission import submit as submit_job

router = APIRouter(tags=["jobs"])


@router.post(
    "/v1/jobs",
    status_code=201,
    responses={
        400: {"model": ErrorBody},
        409: {"model": ErrorBody},
        413: {"model": ErrorBody},
        503: {"model": ErrorBody},
        507: {"model": ErrorBody},
    },
)
async def submit(
    request: Request, backend: Backend, forwarder: Forwarder, contents: Contents
) -> Response:
    """Submit a job: a spec and the pipeline (a .py file or a zipped folder), base64."""
    body = await bounded_body(request, MAX_SUBMISSION_BYTES)
    return await _run_sync(lambda: submit_job(backend, forwarder, contents, body))


@router.get("/v1/jobs")
def jobs(backend: Backend) -> JobList:
    """Every job: live ones and those with a result."""
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready:
        live = {view.job_id: view for view in dispatcher.views()}
        done = [v for v in backend.reader.terminated() if v.job_id not in live]
        views = sorted([*live.values(), *done], key=lambda v: v.submitted_at or 0.0)
    else:
        views = backend.reader.jobs()
    return JobList(jobs=views, served_by=backend.id)


@router.get("/v1/jobs/{job_id}", responses={404: {"model": ErrorBody}})
def job(job_id: str, backend: Backend) -> JobView:
    """A job's state, attempts (TaskManager, epoch, start, end, cause) and checkpoints."""
    return _job_view(backend, _known_form(job_id))


@router.post(
    "/v1/jobs/{job_id}/cancel",
    status_code=202,
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def cancel(job_id: str, backend: Backend, forwarder: Forwarder) -> Response:
    """Cancel a job: its running attempt gets SIGTERM, then SIGKILL after a grace period."""
    _known_form(job_id)
    dispatcher = leading(backend)
    if dispatcher is None:
        return forward(backend, forwarder, "POST", f"/v1/jobs/{job_id}/cancel", b"")
    try:
        view = dispatcher.cancel(job_id)
    except StewardError as exc:
        raise_for(exc)
    return JSONResponse(view.model_dump(mode="json"), status_code=202)


@router.get(
    "/v1/jobs/{job_id}/result",
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def result(job_id: str, backend: Backend) -> ResultView:
    """A terminated job's outcome, from the JobResultStore (outlives the job's cleanup)."""
    entry = backend.reader.result(_known_form(job_id))
    if entry is not None:
        return ResultView.of(entry)
    view = _job_view(backend, job_id)
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


def _job_view(backend: ApiBackend, job_id: str) -> JobView:
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready:
        view = dispatcher.view(job_id)
        if view is not None:
            return view
    found = backend.reader.job(job_id)
    if found is None:
        raise ApiError(404, "job_not_found", f"no job {job_id!r}")
    return found
