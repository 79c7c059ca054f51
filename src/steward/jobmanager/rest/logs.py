"""``GET /v1/jobs/{id}/attempts/{n}/log``: any attempt's log, from any JobManager.

The log is on the TaskManager that ran the attempt. This route finds it from the job's view
(each attempt record names its TaskManager; a terminated job's too) and that TaskManager's
HTTP address from its registration in ZooKeeper, then streams the TaskManager's answer through
as it comes (never holding the log), with the cluster's internal credential, verifying its TLS
certificate as the JobManager verifies the leader (``rest.ssl.ca``). Standbys answer it too:
it needs no leader. The caller needs the role viewer or above and to see the job's team
(another team's job is an unknown id, 404, before any TaskManager or the archive is asked; the
JobManager verified the caller, the TaskManager trusts the JobManager).

What the caller gets: the TaskManager's bytes and its ``x-steward-log-start``. When the
TaskManager no longer serves the log (not registered: stopped or lost with its host; it
answers 404 or 410; it cannot be reached), the log archive in the HA storage does, once the
attempt ended and its TaskManager copied it there (:mod:`.archived_logs`). Without an archived
copy: the TaskManager's 400, 404 and 410 as they are; 503 ``taskmanager_gone`` when it is not
registered; 502 ``taskmanager_unreachable`` when it cannot be reached or refuses.
An attempt the leader sent but that has not started yet (DEPLOYING) may be unknown to its
TaskManager for a moment: its log is then empty, and a follower waits for it to start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated

import httpx
from fastapi import APIRouter, FastAPI, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from steward.security.credentials import internal_credential
from steward.security.identity import Identity
from steward.security.roles import Action
from steward.store.log_archive import LogArchive
from steward.tls.contexts import ClientTls, client_tls
from steward.wire.logs import (
    LOG_MEDIA_TYPE,
    MAX_ATTEMPT,
    START_HEADER,
    TASKMANAGER_HEADER,
    LogQuery,
    taskmanager_log_path,
)
from steward.wire.records import AttemptRecord
from steward.wire.rest import ErrorBody, TaskManagerView
from steward.wire.states import AttemptState
from steward.wire.values import check_job_id

from .archived_logs import archived_log
from .auth import Caller, require
from .backend import ApiBackend
from .errors import ApiError
from .state import Backend
from .teams import job_not_found, visible

log = logging.getLogger(__name__)

router = APIRouter(tags=["jobs"])

_CONNECT_TIMEOUT = 5.0
_READ_TIMEOUT = 30.0
"""Longest wait for the next bytes of a log that is not followed (a followed one may idle)."""
_PASSED_THROUGH = frozenset({400, 404, 410})
_DEPLOYING_WAIT = 30.0
"""How long a follower of an attempt sent to its TaskManager waits for it to start there."""
_DEPLOYING_POLL = 0.5


class LogProxy:
    """How this JobManager asks TaskManagers for logs: one HTTP client per event loop (the
    server's), the internal credential on every request."""

    def __init__(self, tls: ClientTls, credential: str | None) -> None:
        self._tls = tls
        self._headers = {"authorization": f"Bearer {credential}"} if credential else {}
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        found = self._clients.get(loop)
        if found is None:
            found = httpx.AsyncClient(verify=self._tls.context, headers=self._headers)
            self._clients[loop] = found
        return found


def install(app: FastAPI, backend: ApiBackend, tls: ClientTls | None) -> None:
    """Give the app its proxy: the JobManager's internal credential and how it verifies TLS."""
    credential = internal_credential(backend.config.settings.security)
    app.state.log_proxy = LogProxy(tls or client_tls(), credential)
    app.state.log_archive = LogArchive(backend.blobs)


AttemptNumber = Annotated[int, Path(ge=1, le=MAX_ATTEMPT)]


@router.get(
    "/v1/jobs/{job_id}/attempts/{attempt}/log",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/plain": {}}, "description": "the log's bytes"},
        400: {"model": ErrorBody},
        404: {"model": ErrorBody},
        410: {"model": ErrorBody},
        502: {"model": ErrorBody},
        503: {"model": ErrorBody},
    },
)
async def attempt_log(
    job_id: str,
    attempt: AttemptNumber,
    *,
    request: Request,
    caller: Caller,
    backend: Backend,
    query: Annotated[LogQuery, Query()],
) -> Response:
    """An attempt's runner.log (the runner's, the pipeline's and Spark's output), streamed
    from the TaskManager that ran it; ``follow`` keeps it open until the attempt ends."""
    require(caller, Action.READ)
    record, taskmanager = await run_in_threadpool(_where, backend, job_id, attempt, caller)
    archive: LogArchive = request.app.state.log_archive

    async def archived_or(error: ApiError) -> Response:
        found = await archived_log(archive, job_id, attempt, record.taskmanager, query)
        if found is None:
            raise error
        return found

    if taskmanager is None:
        return await archived_or(_gone(job_id, record))
    proxy: LogProxy = request.app.state.log_proxy
    address = taskmanager.http_address
    if address is None:
        return await archived_or(
            ApiError(
                502,
                "taskmanager_unreachable",
                f"TaskManager {taskmanager.id}, which ran attempt {attempt} of job {job_id},"
                " serves no logs (it runs a Steward without an HTTP port)",
            )
        )
    timeout = httpx.Timeout(_READ_TIMEOUT, connect=_CONNECT_TIMEOUT)
    if query.follow:
        timeout = httpx.Timeout(None, connect=_CONNECT_TIMEOUT)
    client = proxy.client()
    url = address + taskmanager_log_path(job_id, record.number, internal=True)
    # Sent, not yet started there: its TaskManager may not know it for a moment (404).
    deploying = record.state is AttemptState.DEPLOYING
    deadline = time.monotonic() + _DEPLOYING_WAIT
    while True:
        try:
            upstream = await client.send(
                client.build_request("GET", url, params=query.params(), timeout=timeout),
                stream=True,
            )
        except httpx.HTTPError as exc:
            why = f"{type(exc).__name__}: {exc}"
            return await archived_or(_unreachable(taskmanager, address, why))
        if upstream.status_code == 200:
            break
        await upstream.aread()
        await upstream.aclose()
        if not (deploying and upstream.status_code == 404):
            return await archived_or(_refused(taskmanager, upstream))
        if not query.follow or time.monotonic() >= deadline:
            return Response(
                b"",
                media_type=LOG_MEDIA_TYPE,
                headers={START_HEADER: "0", TASKMANAGER_HEADER: taskmanager.id},
            )
        await asyncio.sleep(_DEPLOYING_POLL)
    return StreamingResponse(
        _relay(upstream),
        media_type=LOG_MEDIA_TYPE,
        headers={
            START_HEADER: upstream.headers.get(START_HEADER, str(query.offset)),
            TASKMANAGER_HEADER: taskmanager.id,
            "cache-control": "no-store",
        },
    )


async def _relay(upstream: httpx.Response) -> AsyncIterator[bytes]:
    """The TaskManager's bytes as they come; the connection closed however it ends (the
    caller going away cancels this generator)."""
    try:
        async for block in upstream.aiter_raw():
            yield block
    except httpx.HTTPError as exc:
        # The TaskManager went away mid-stream: the caller sees the stream end there.
        log.warning("log stream from a TaskManager broke url=%s: %s", upstream.url, exc)
    finally:
        await upstream.aclose()


def _where(
    backend: ApiBackend, job_id: str, attempt: int, caller: Identity
) -> tuple[AttemptRecord, TaskManagerView | None]:
    """The attempt's record and its TaskManager's registration (None: not registered); 404
    for an unknown job or attempt, and for a job of a team ``caller`` is not in."""
    try:
        check_job_id(job_id)
    except ValueError:
        raise ApiError(404, "job_not_found", f"no job {job_id[:200]!r}") from None
    view = None
    dispatcher = backend.dispatcher
    if dispatcher is not None and dispatcher.ready:
        view = dispatcher.view(job_id)
    if view is None:
        view = backend.reader.job(job_id)
    if view is None:
        raise job_not_found(job_id)
    visible(caller, backend, view)
    record = next((a for a in view.attempts if a.number == attempt), None)
    if record is None:
        kept = ", ".join(str(a.number) for a in view.attempts) or "none yet"
        raise ApiError(
            404,
            "attempt_not_found",
            f"job {job_id} has no attempt {attempt} on record (attempts: {kept})",
        )
    for taskmanager in backend.reader.taskmanagers():
        if taskmanager.id == record.taskmanager:
            return record, taskmanager
    return record, None


def _gone(job_id: str, record: AttemptRecord) -> ApiError:
    return ApiError(
        503,
        "taskmanager_gone",
        f"attempt {record.number} of job {job_id} ran on TaskManager {record.taskmanager},"
        " which is not registered now (stopped, or lost with its host), and its log is not in"
        " the archive (yet): that TaskManager copies it there once the attempt ended, or when"
        " it starts again; until then it is on that host, in its taskmanager.workdir",
    )


def _unreachable(taskmanager: TaskManagerView, address: str, why: str) -> ApiError:
    return ApiError(
        502,
        "taskmanager_unreachable",
        f"cannot read the log from TaskManager {taskmanager.id} at {address}: {why}",
    )


def _refused(taskmanager: TaskManagerView, answer: httpx.Response) -> ApiError:
    try:
        body = ErrorBody.model_validate_json(answer.content)
    except ValidationError:
        text = answer.text.strip()[:200]
        return _unreachable(taskmanager, str(answer.url), f"HTTP {answer.status_code} {text}")
    if answer.status_code in _PASSED_THROUGH:
        return ApiError(answer.status_code, body.code, body.message)
    if answer.status_code in (401, 403):
        return _unreachable(
            taskmanager,
            str(answer.url.copy_with(query=None)),
            f"it refused this JobManager's internal credential ({body.message}); every member"
            " needs the same security.internal.token-file",
        )
    return _unreachable(taskmanager, str(answer.url.copy_with(query=None)), body.message)
