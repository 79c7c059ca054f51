"""Livy's batch API (``/batches``) on every JobManager, mapped onto Steward's jobs.

A Livy client (curl as in Livy's REST docs, Airflow's ``LivyHook``/``LivyOperator``) works
unchanged: the same paths, field names, states and JSON shapes, errors as Livy's ``{"msg"}``
(with Steward's ``code`` beside it). Batch ``n`` is job ``livy-<n>`` (:mod:`steward.wire.livy`);
a standby forwards ``POST`` and ``DELETE`` to the leader like every write, and answers reads
itself. Authentication is every route's (a bearer token, or HTTP basic with the token as the
password: :mod:`steward.security.asgi`); roles and teams as on ``/v1/jobs`` (a batch is its
submitter's team's, which must be its only one; another team's batch is Livy's 404). What
maps and what is refused: docs/coming-from.md, "Livy".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import ParamSpec

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from steward.errors import StewardError
from steward.jobmanager.indexed_job import IndexedJob
from steward.security import audit
from steward.security.identity import Identity
from steward.security.roles import Action
from steward.security.teams import TeamRefusedError, submission_team
from steward.store.contents import ContentStore
from steward.store.sources import allowed_prefixes
from steward.wire.livy import (
    BATCH_STATES,
    LOG_TAIL,
    MAX_LIST,
    AppInfo,
    Batch,
    BatchList,
    BatchLog,
    BatchStateView,
    LivyMessage,
    batch_id_of,
    batch_job_id,
    parse_batch_id,
)
from steward.wire.logs import job_log_path
from steward.wire.rest import JobView

from . import livy_logs, livy_submit
from .auth import Caller, client_address, require
from .backend import ApiBackend
from .bodies import bounded_body
from .errors import ApiError, no_leader, raise_for
from .forwarding import forward, leading
from .jobs_submit import artifact_limit, check_json_shape
from .state import Backend, Contents, Forwarder
from .teams import check_proxy, default_team, proxy_grants, scope, sees

router = APIRouter(tags=["livy"])

MAX_BODY = 1 << 20
"""A batch request names its files; it never carries them."""
_P = ParamSpec("_P")


def livy_errors(route: Callable[_P, Awaitable[Response]]) -> Callable[_P, Awaitable[Response]]:
    """Errors as Livy answers them: ``{"msg": ..., "code": ...}``, Steward's status."""

    @wraps(route)
    async def answered(*args: _P.args, **kwargs: _P.kwargs) -> Response:
        try:
            return await route(*args, **kwargs)
        except ApiError as exc:
            body = LivyMessage(msg=exc.body.message, code=exc.body.code)
            return JSONResponse(body.model_dump(), status_code=exc.status, headers=exc.headers)

    return answered


def _answers(*statuses: int) -> dict[int | str, dict[str, object]]:
    """What the OpenAPI document says a route may answer besides success: Livy's ``{"msg"}``
    (with Steward's ``code``), so a generated client and the fuzzing know every answer."""
    return {status: {"model": LivyMessage} for status in statuses}


@router.post("/batches", status_code=201, responses=_answers(400, 409, 413, 502, 503))
@livy_errors
async def create(
    request: Request, caller: Caller, backend: Backend, forwarder: Forwarder, contents: Contents
) -> Response:
    """Livy's ``POST /batches``: run a PySpark file as a new batch (job ``livy-<id>``)."""
    where = client_address(request)
    if not caller.may(Action.SUBMIT):
        audit.record("job.submit", caller, client=where, outcome="denied")
        require(caller, Action.SUBMIT)
    body = await bounded_body(request, MAX_BODY, f"a batch request is at most {MAX_BODY} bytes")
    check_json_shape(body)
    if leading(backend) is None:
        return await run_in_threadpool(_forwarded, backend, forwarder, request, body)
    try:
        view = await _stored(backend, contents, caller, body)
    except ApiError as exc:
        audit.record("job.submit", caller, client=where, outcome=str(exc.status))
        raise
    audit.record("job.submit", caller, client=where, job_id=view.job_id)
    backend.reader.note(view)
    answer = _batch(request, view, [])
    location = {"location": f"/batches/{answer.id}"}
    return JSONResponse(answer.model_dump(mode="json"), status_code=201, headers=location)


async def _stored(
    backend: ApiBackend, contents: ContentStore, caller: Identity, body: bytes
) -> JobView:
    """The batch checked, its files fetched, then stored by the leader's term."""
    allowed = allowed_prefixes(backend.config.settings.jobmanager.livy_allowed_sources)
    batch = livy_submit.parse(body)
    most = artifact_limit(backend)
    prepared = await run_in_threadpool(livy_submit.prepare, batch, contents, allowed, most)
    dispatcher = leading(backend)
    if dispatcher is None:
        raise no_leader()
    try:
        team = submission_team(caller, None, default_team(backend))
    except TeamRefusedError as exc:
        raise ApiError(403, "forbidden", str(exc)) from None
    check_proxy(caller, prepared[0].proxy_user, proxy_grants(backend))
    return await run_in_threadpool(
        livy_submit.store, dispatcher, contents, prepared, caller=caller, body=body, team=team
    )


def _forwarded(
    backend: ApiBackend, forwarder: httpx.Client, request: Request, body: bytes
) -> Response:
    """The leader's answer; the batch it accepted is listed here at once too (one read), so a
    client that submits through this standby and then lists sees its batch."""
    answer = forward(backend, forwarder, request, body)
    if answer.status_code == 201:
        with contextlib.suppress(ValueError, KeyError, TypeError, StewardError):
            batch_id = json.loads(bytes(answer.body))["id"]
            view = backend.reader.job(batch_job_id(int(batch_id)))
            if view is not None:
                backend.reader.note(view)
    return answer


@router.get("/batches", responses=_answers(400, 503))
@livy_errors
async def batches(request: Request, caller: Caller, backend: Backend) -> Response:
    """Livy's ``GET /batches``: ``size`` batches (default 100) from offset ``from``, oldest
    first, and ``total``. A listed batch's ``log`` is empty (each batch's view has its tail)."""
    require(caller, Action.READ)
    start, size = _int_param(request, "from") or 0, _size(request)
    found = backend.reader.batches(start, size, scope(caller, backend))
    if found is None:
        raise ApiError(
            503, "not_ready", "the job index is being filled", headers={"Retry-After": "1"}
        )
    total, jobs = found
    sessions = [_listed(request, backend, job) for job in jobs]
    answer = BatchList.model_validate({"from": start, "total": total, "sessions": sessions})
    return JSONResponse(answer.document())


@router.get("/batches/{batch_id}", responses=_answers(400, 404, 503))
@livy_errors
async def batch(batch_id: str, request: Request, caller: Caller, backend: Backend) -> Response:
    """Livy's ``GET /batches/{id}``: its state, application and last 10 log lines."""
    require(caller, Action.READ)
    view = await run_in_threadpool(_view, backend, batch_id, caller)
    lines = await livy_logs.tail(request, backend, view, LOG_TAIL)
    return JSONResponse(_batch(request, view, lines).model_dump(mode="json"))


@router.get("/batches/{batch_id}/state", responses=_answers(400, 404, 503))
@livy_errors
async def state(batch_id: str, caller: Caller, backend: Backend) -> Response:
    """Livy's ``GET /batches/{id}/state``: ``{"id", "state"}``."""
    require(caller, Action.READ)
    view = await run_in_threadpool(_view, backend, batch_id, caller)
    answer = BatchStateView(id=_number(batch_id), state=BATCH_STATES[view.state])
    return JSONResponse(answer.model_dump(mode="json"))


@router.get("/batches/{batch_id}/log", responses=_answers(400, 404, 503))
@livy_errors
async def batch_log(batch_id: str, request: Request, caller: Caller, backend: Backend) -> Response:
    """Livy's ``GET /batches/{id}/log``: lines ``from`` to ``from + size`` of the latest
    attempt's log (default: the last 100), and ``total``, the log's line count."""
    require(caller, Action.READ)
    start, size = _int_param(request, "from"), _size(request)
    view = await run_in_threadpool(_view, backend, batch_id, caller)
    lines = await livy_logs.page(request, backend, view, start, size)
    found = {"id": _number(batch_id), "from": lines.start, "total": lines.total, "log": lines.lines}
    answer = BatchLog.model_validate(found)
    return JSONResponse(answer.document())


@router.delete("/batches/{batch_id}", responses=_answers(400, 404, 409, 502, 503))
@livy_errors
async def delete(
    batch_id: str, request: Request, caller: Caller, backend: Backend, forwarder: Forwarder
) -> Response:
    """Livy's ``DELETE /batches/{id}``: cancel the batch, ``{"msg": "deleted"}``. A batch that
    has ended already answers the same; its result is kept (Steward's retention removes it)."""
    return await run_in_threadpool(_delete, batch_id, request, caller, backend, forwarder)


def _delete(
    batch_id: str, request: Request, caller: Identity, backend: ApiBackend, forwarder: httpx.Client
) -> Response:
    where = client_address(request)
    if not caller.may(Action.CANCEL_OWN):
        audit.record("job.cancel", caller, client=where, outcome="denied")
        require(caller, Action.CANCEL_OWN)
    view = _view(backend, batch_id, caller)
    dispatcher = leading(backend)
    if dispatcher is None:
        return forward(backend, forwarder, request, b"")
    if not caller.may(Action.CANCEL_ANY) and view.submitter != caller.name:
        audit.record("job.cancel", caller, client=where, outcome="denied", job_id=view.job_id)
        raise ApiError(403, "forbidden", f"{caller.name} may delete only the batches it submitted")
    if not view.state.is_terminal:
        try:
            backend.reader.note(dispatcher.cancel(view.job_id))
        except StewardError as exc:
            if not _ended(exc):
                raise_for(exc)
        audit.record("job.cancel", caller, client=where, job_id=view.job_id)
    return JSONResponse(LivyMessage(msg="deleted").model_dump(exclude_none=True))


def _ended(exc: StewardError) -> bool:
    """The cancel found the job ended meanwhile: deleted all the same."""
    try:
        raise_for(exc)
    except ApiError as answer:
        return answer.body.code == "job_terminated"


def _batch(request: Request, view: JobView, lines: list[str]) -> Batch:
    attempt = view.attempts[-1] if view.attempts else None
    app = attempt.spark_app if attempt is not None else None
    log_url = _log_url(request, view.job_id, attempt.number if attempt is not None else None)
    return Batch(
        id=batch_id_of(view.job_id) or 0,
        name=view.name or None,
        owner=view.submitter,
        proxyUser=view.proxy_user,
        state=BATCH_STATES[view.state],
        appId=app.app_id if app is not None else None,
        appInfo=AppInfo(driverLogUrl=log_url, sparkUiUrl=app.ui_url if app else None),
        log=lines,
    )


def _listed(request: Request, backend: ApiBackend, job: IndexedJob) -> Batch:
    """A listed batch: the leader's own view of a live one (ahead of the index), else the
    index's entry (no ZooKeeper read per batch)."""
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready and not job.state.is_terminal:
        live = dispatcher.view(job.job_id, with_checkpoints=False)
        if live is not None:
            return _batch(request, live, [])
    attempt = job.latest_attempt
    log_url = _log_url(request, job.job_id, attempt.number if attempt is not None else None)
    return Batch(
        id=batch_id_of(job.job_id) or 0,
        name=job.name or None,
        owner=job.submitter,
        state=BATCH_STATES[job.state],
        appInfo=AppInfo(driverLogUrl=log_url),
    )


def _log_url(request: Request, job_id: str, attempt: int | None) -> str | None:
    """Where the driver's log of ``job_id``'s attempt is read (None: no attempt yet)."""
    if attempt is None:
        return None
    return str(request.base_url).rstrip("/") + job_log_path(job_id, attempt)


def _view(backend: ApiBackend, batch_id: str, caller: Identity) -> JobView:
    """The batch's job, if ``caller`` sees its team; else Livy's 404, as for no batch."""
    job_id = batch_job_id(_number(batch_id))
    dispatcher = backend.dispatcher
    found = None
    if dispatcher is not None and dispatcher.ready:
        found = dispatcher.view(job_id)
    if found is None:
        found = backend.reader.job(job_id)
    if found is None or not sees(caller, backend, found.team):
        raise _not_found(batch_id)
    return found


def _number(batch_id: str) -> int:
    """The batch id in a path; anything that names no batch is Livy's 404."""
    number = parse_batch_id(batch_id)
    if number is None:
        raise _not_found(batch_id)
    return number


def _not_found(batch_id: str) -> ApiError:
    return ApiError(404, "batch_not_found", f"Session '{batch_id[:40]}' not found.")


def _size(request: Request) -> int:
    """``size``: 100 unless given, at most :data:`MAX_LIST`."""
    size = _int_param(request, "size")
    return 100 if size is None else min(size, MAX_LIST)


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 9:
        raise ApiError(400, "bad_request", f"{name}: {raw[:40]!r} is not a number from 0")
    return int(raw)
