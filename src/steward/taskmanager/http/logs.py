"""``GET /v1/attempts/{job_id}/{attempt}/log``: an attempt's log, streamed as it is on disk.

Users' tokens reach it at ``/v1/...`` (role viewer or above); JobManagers, which proxy it for
any caller they verified, at ``/internal/v1/...`` with the cluster's internal credential (the
middleware lets that credential nowhere else, and nothing else there). Both answer the same:
the bytes from ``offset`` (or the last ``tail`` lines), following the attempt with
``follow=true``; 404 for an attempt that has no log here, 410 once the retention removed it
(:mod:`.files`). The request is read by the same models as the JobManagers' log route
(:class:`~steward.wire.logs.LogQuery`), strictly: a parameter it does not know is a 400 naming
it, not silently a plain read (a typo such as ``?folow=true``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from steward.security.identity import Identity
from steward.security.roles import Action
from steward.wire.logs import LOG_MEDIA_TYPE, MAX_ATTEMPT, START_HEADER, LogQuery

from .errors import bad_request
from .files import LogRequest, LogUnavailableError
from .state import node_of

_ATTEMPT = TypeAdapter(Annotated[int, Field(ge=1, le=MAX_ATTEMPT)])


async def attempt_log(request: Request) -> StreamingResponse:
    """An attempt's runner.log, for a user's token (viewer or above)."""
    job_id, attempt, query = _parsed(request)  # a bad request is a 400 before a 403
    caller = getattr(request.state, "identity", None)
    if not isinstance(caller, Identity) or not caller.may(Action.READ):
        who = f"{caller.name} (role {caller.role})" if isinstance(caller, Identity) else "caller"
        raise LogUnavailableError(403, "forbidden", f"{who} may not read logs")
    return await _answer(request, job_id, attempt, query)


async def proxied_attempt_log(request: Request) -> StreamingResponse:
    """An attempt's runner.log, for a JobManager (the internal credential)."""
    return await _answer(request, *_parsed(request))


def _parsed(request: Request) -> tuple[str, int, LogQuery]:
    """The job id, the attempt number and the query; 400 naming the first thing wrong."""
    try:
        attempt = _ATTEMPT.validate_python(request.path_params["attempt"])
    except ValidationError as exc:
        raise bad_request(("path", "attempt"), exc) from None
    try:
        query = LogQuery.model_validate(dict(request.query_params))
    except ValidationError as exc:
        raise bad_request(("query",), exc) from None
    job_id: str = request.path_params["job_id"]
    return job_id, attempt, query


async def _answer(
    request: Request, job_id: str, attempt: int, query: LogQuery
) -> StreamingResponse:
    logs = node_of(request).logs
    found: LogRequest = await run_in_threadpool(
        logs.open, job_id, attempt, query.offset, query.tail, query.follow
    )
    return StreamingResponse(
        logs.stream(found),
        media_type=LOG_MEDIA_TYPE,
        headers={START_HEADER: str(found.start), "cache-control": "no-store"},
    )


ROUTES = (
    Route("/v1/attempts/{job_id}/{attempt}/log", attempt_log, methods=["GET"]),
    Route("/internal/v1/attempts/{job_id}/{attempt}/log", proxied_attempt_log, methods=["GET"]),
)
