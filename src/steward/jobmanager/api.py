"""The REST API every JobManager serves (OpenAPI at /openapi.json, docs at /docs).

Reads are answered by whichever JobManager is asked: the leader from memory and ZooKeeper, a
standby from ZooKeeper alone (so reads keep working while there is no leader). Writes are
carried out by the leader; a standby forwards them to it, and answers 503 with Retry-After
while no leader is known. Every error is an :class:`ErrorBody` with a machine-readable code.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import anyio.to_thread
import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from steward.errors import (
    BlobStoreError,
    FencedError,
    JobExistsError,
    JobNotFoundError,
    JobRejectedError,
    NotReadyError,
    StewardError,
)
from steward.jobmanager.errors import JobResultExistsError
from steward.store.contents import ContentStore
from steward.supervisor.artifacts import check_submission
from steward.wire import spark_options
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.rest import (
    ClusterView,
    ErrorBody,
    JobList,
    JobView,
    LeaderView,
    ResultView,
    SubmitRequest,
)
from steward.wire.values import check_job_id

from .content_routes import add_content_routes, missing_contents
from .dispatcher import new_job_id

if TYPE_CHECKING:
    from .manager import JobManager

log = logging.getLogger(__name__)

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
MAX_SUBMISSION_BYTES = MAX_ARTIFACT_BYTES * 4 // 3 + 64 * 1024
"""A submission's body: the artifact in base64 plus room for the spec."""
RETRY_AFTER = "1"
HEARTBEAT_THREADS = 1024
"""Threads for TaskManager heartbeats (each may wait up to heartbeat.interval)."""
_FORWARD_TIMEOUT = 30.0
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(code=code, message=message, **extra)
        self.headers = headers or {}


def _no_leader(message: str = "no JobManager leads right now; retry shortly") -> ApiError:
    return ApiError(503, "no_leader", message, headers={"Retry-After": RETRY_AFTER})


def create_app(manager: JobManager) -> FastAPI:
    app = FastAPI(
        title="Steward",
        summary="A highly available job manager for PySpark pipelines",
        version="1",
    )
    forwarder = httpx.Client(timeout=_FORWARD_TIMEOUT)
    heartbeat_threads = anyio.CapacityLimiter(HEARTBEAT_THREADS)
    contents = ContentStore(manager.blobs, max_size=manager.config.upload_max_size)

    _add_error_handlers(app)
    _add_health_routes(app, manager)
    add_content_routes(app, contents)

    # ------------------------------------------------------------------ cluster

    @app.get("/v1/cluster", tags=["cluster"])
    def cluster() -> ClusterView:
        """The leader, every JobManager, and the TaskManagers with their slots."""
        leader = manager.reader.leader()
        dispatcher = manager.dispatcher
        taskmanagers = (
            dispatcher.taskmanagers()
            if dispatcher is not None and dispatcher.ready
            else manager.reader.taskmanagers()
        )
        return ClusterView(
            cluster_id=manager.cluster_id(),
            leader=_leader_view(leader),
            jobmanagers=manager.reader.jobmanagers(leader),
            taskmanagers=taskmanagers,
            served_by=manager.id,
        )

    # ------------------------------------------------------------------ jobs

    @app.post(
        "/v1/jobs",
        tags=["jobs"],
        status_code=201,
        responses={
            400: {"model": ErrorBody},
            409: {"model": ErrorBody},
            413: {"model": ErrorBody},
            503: {"model": ErrorBody},
            507: {"model": ErrorBody},
        },
    )
    async def submit(request: Request) -> Response:
        """Submit a job: a spec and the pipeline (a .py file or a zipped folder), base64."""
        body = await _bounded_body(request, MAX_SUBMISSION_BYTES)
        return await _run_sync(request, lambda: _submit(manager, forwarder, contents, body))

    @app.get("/v1/jobs", tags=["jobs"])
    def jobs() -> JobList:
        """Every job: live ones and those with a result."""
        dispatcher = manager.dispatcher
        if dispatcher is not None and dispatcher.ready:
            live = {view.job_id: view for view in dispatcher.views()}
            done = [v for v in manager.reader.terminated() if v.job_id not in live]
            views = sorted([*live.values(), *done], key=lambda v: v.submitted_at or 0.0)
        else:
            views = manager.reader.jobs()
        return JobList(jobs=views, served_by=manager.id)

    @app.get("/v1/jobs/{job_id}", tags=["jobs"], responses={404: {"model": ErrorBody}})
    def job(job_id: str) -> JobView:
        """A job's state, attempts (TaskManager, epoch, start, end, cause) and checkpoints."""
        return _job_view(manager, _known_form(job_id))

    @app.post(
        "/v1/jobs/{job_id}/cancel",
        tags=["jobs"],
        status_code=202,
        responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
    )
    def cancel(job_id: str) -> Response:
        """Cancel a job: its running attempt gets SIGTERM, then SIGKILL after a grace period."""
        _known_form(job_id)
        dispatcher = _leading(manager)
        if dispatcher is None:
            return _forward(manager, forwarder, "POST", f"/v1/jobs/{job_id}/cancel", b"")
        try:
            view = dispatcher.cancel(job_id)
        except StewardError as exc:
            _raise_for(exc)
        return JSONResponse(view.model_dump(mode="json"), status_code=202)

    @app.get(
        "/v1/jobs/{job_id}/result",
        tags=["jobs"],
        responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
    )
    def result(job_id: str) -> ResultView:
        """A terminated job's outcome, from the JobResultStore (outlives the job's cleanup)."""
        entry = manager.reader.result(_known_form(job_id))
        if entry is not None:
            return ResultView.of(entry)
        view = _job_view(manager, job_id)
        raise ApiError(
            409,
            "job_not_terminated",
            f"job {job_id!r} has not terminated yet (state {view.state.value})",
        )

    # ------------------------------------------------------------------ TaskManagers

    @app.post(HEARTBEAT_PATH, tags=["internal"], responses={409: {"model": ErrorBody}})
    async def heartbeat(request: Request) -> Response:
        """TaskManager heartbeat (see steward.wire.heartbeat): reports in, commands back."""
        body = await request.body()
        # Heartbeats long-poll: they wait on their own threads, never on the pool that
        # serves the API (40 waiting TaskManagers would otherwise starve /healthz).
        response: Response = await anyio.to_thread.run_sync(
            lambda: _heartbeat(manager, body), limiter=heartbeat_threads
        )
        return response

    return app


# ---------------------------------------------------------------------- handlers


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answer is an ErrorBody ``{code, message}``, whatever raised it."""

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            exc.body.model_dump(mode="json", exclude_none=True),
            status_code=exc.status,
            headers=exc.headers,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing errors (no such path, e.g. a job id with a "/" in it; wrong method) would
        # otherwise be FastAPI's {"detail": ...}, not the ErrorBody every client expects.
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = f"{exc.detail}: {request.method} {request.url.path[:200]}"
        body = ErrorBody(code=code, message=message)
        return JSONResponse(
            body.model_dump(mode="json", exclude_none=True),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        body = ErrorBody(code="bad_request", message=_describe(exc.errors()))
        return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=400)


def _add_health_routes(app: FastAPI, manager: JobManager) -> None:

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Alive: the process answers."""
        return {"status": "ok", "id": manager.id, "role": _role(manager)}

    @app.get("/readyz", tags=["health"], responses={503: {"model": ErrorBody}})
    def readyz() -> dict[str, Any]:
        """Ready: connected to ZooKeeper and a leader is known (and, on the leader, recovered)."""
        if not manager.session.connected:
            raise ApiError(503, "not_ready", "not connected to ZooKeeper")
        if manager.leader() is None:
            raise _no_leader()
        dispatcher = manager.dispatcher
        if dispatcher is not None and not dispatcher.ready:
            raise ApiError(503, "not_ready", "recovering jobs", headers={"Retry-After": "1"})
        return {"ready": True, "id": manager.id, "role": _role(manager)}


async def _run_sync(_request: Request, work: Any) -> Response:
    from starlette.concurrency import run_in_threadpool

    result: Response = await run_in_threadpool(work)
    return result


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (413) as soon as it is known to exceed ``limit`` bytes.

    Read chunk by chunk, never whole: a client sending gigabytes (by mistake or not) must not
    make the JobManager hold them in memory, least of all the leader.
    """
    too_large = ApiError(
        413,
        "too_large",
        f"submissions are limited to {MAX_ARTIFACT_BYTES} bytes of artifact",
        # Otherwise the server would go on reading (and dropping) the rest to keep the
        # connection: closing it stops the upload.
        headers={"Connection": "close"},
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _submit(
    manager: JobManager, forwarder: httpx.Client, contents: ContentStore, body: bytes
) -> Response:
    dispatcher = _leading(manager)
    if dispatcher is None:
        return _forward(manager, forwarder, "POST", "/v1/jobs", body)
    try:
        request = SubmitRequest.model_validate_json(body)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", _describe(exc.errors())) from None
    spec_fields = dict(request.spec)
    if not spec_fields.get("job_id"):
        stem = request.artifact.filename.rsplit(".", 1)[0] or "job"
        spec_fields["job_id"] = new_job_id("".join(c if c.isalnum() else "-" for c in stem)[:40])
    if request.options:
        _apply_spark_options(spec_fields, request.options)
    try:
        spec = JobSpec.model_validate(spec_fields)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", "bad spec: " + _describe(exc.errors())) from None
    try:
        data = base64.b64decode(request.artifact.data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "bad_request", "artifact.data_b64 is not valid base64") from None
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ApiError(413, "too_large", f"artifacts are limited to {MAX_ARTIFACT_BYTES} bytes")
    try:
        artifact, spec = check_submission(request.artifact.filename, data, spec)
        graph = JobGraph(spec=spec, artifact=artifact, submitted_at=time.time())
        # Pinned: the leader's content GC cannot remove a file between this check and the
        # job graph that names it being stored.
        with dispatcher.content_gc.pinned(d.sha256 for d in spec.dependencies):
            missing = missing_contents(contents, spec.dependencies)
            if missing is not None:
                raise ApiError(400, "missing_contents", missing)
            view = dispatcher.submit(spec, graph)
    except StewardError as exc:
        _raise_for(exc)
    return JSONResponse(view.model_dump(mode="json"), status_code=201)


def _apply_spark_options(spec_fields: dict[str, Any], options: dict[str, str]) -> None:
    """spark-submit's options (``driver-memory``, Livy's ``driverMemory``) into the spec."""
    conf = spec_fields.get("spark_conf") or {}
    if not isinstance(conf, dict):
        return  # the spec's own validation names the problem
    try:
        spec_fields["spark_conf"] = spark_options.apply(conf, options)
    except JobRejectedError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    name = spec_fields["spark_conf"].get(spark_options.SPARK_OPTION_KEYS["name"])
    if name is not None and not spec_fields.get("name"):
        spec_fields["name"] = name


def _heartbeat(manager: JobManager, body: bytes) -> Response:
    try:
        beat = Heartbeat.from_json(body)
    except StewardError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    dispatcher = _leading(manager)
    if dispatcher is None:
        raise ApiError(
            409,
            "not_leader",
            f"{manager.id} is not the leader",
            leader=_leader_view(manager.leader()),
        )
    reply: HeartbeatReply = dispatcher.heartbeat(beat)
    return Response(reply.to_json(), media_type="application/json")


def _leading(manager: JobManager) -> Any:
    dispatcher = manager.dispatcher
    if dispatcher is None or dispatcher.stopped:
        return None
    return dispatcher


def _forward(
    manager: JobManager, forwarder: httpx.Client, method: str, path: str, body: bytes
) -> Response:
    leader = manager.leader()
    if leader is None or leader.contender == manager.id:
        raise _no_leader()
    try:
        answer = forwarder.request(
            method,
            leader.address.rstrip("/") + path,
            content=body,
            headers={"content-type": "application/json", "x-steward-forwarded-by": manager.id},
        )
    except httpx.HTTPError as exc:
        raise _no_leader(f"the leader {leader.contender} did not answer: {exc}") from None
    headers = {k: v for k, v in answer.headers.items() if k.lower() in ("retry-after",)}
    return Response(
        answer.content,
        status_code=answer.status_code,
        media_type=answer.headers.get("content-type", "application/json"),
        headers=headers,
    )


def _known_form(job_id: str) -> str:
    """``job_id`` if it could name a job; any other string names no job (404, not 500)."""
    try:
        return check_job_id(job_id)
    except ValueError:
        raise ApiError(404, "job_not_found", f"no job {job_id[:200]!r}") from None


def _job_view(manager: JobManager, job_id: str) -> JobView:
    dispatcher = manager.dispatcher
    if dispatcher is not None and dispatcher.ready:
        view = dispatcher.view(job_id)
        if view is not None:
            return view
    found = manager.reader.job(job_id)
    if found is None:
        raise ApiError(404, "job_not_found", f"no job {job_id!r}")
    return found


def _raise_for(exc: StewardError) -> NoReturn:
    if isinstance(exc, JobResultExistsError):
        raise ApiError(409, "job_terminated", str(exc), result=ResultView.of(exc.result)) from None
    if isinstance(exc, JobExistsError):
        raise ApiError(409, "job_exists", str(exc)) from None
    if isinstance(exc, JobNotFoundError):
        raise ApiError(404, "job_not_found", str(exc)) from None
    if isinstance(exc, JobRejectedError):
        raise ApiError(400, "bad_request", str(exc)) from None
    if isinstance(exc, BlobStoreError):
        # Full, read-only or unreachable storage: not answered 503, which clients retry for
        # their whole timeout and then report as "no JobManager answered"; the user needs
        # the storage's own error now. Nothing was written (see JobGraphStore.put).
        log.warning("blob storage refused a write error=%s", exc)
        raise ApiError(507, "storage_unavailable", str(exc)) from None
    if isinstance(exc, NotReadyError | FencedError):
        raise ApiError(503, "not_ready", str(exc), headers={"Retry-After": RETRY_AFTER}) from None
    log.warning("request failed error=%r", exc)
    raise ApiError(503, "unavailable", str(exc), headers={"Retry-After": RETRY_AFTER}) from None


def _role(manager: JobManager) -> str:
    return "leader" if manager.is_leader else "standby"


def _leader_view(leader: Any) -> LeaderView | None:
    if leader is None:
        return None
    return LeaderView(id=leader.contender, address=leader.address, epoch=leader.epoch)


def _describe(errors: Any) -> str:
    parts = []
    for error in list(errors)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
