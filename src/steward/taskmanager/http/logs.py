"""``GET /v1/attempts/{job_id}/{attempt}/log``: an attempt's log, streamed as it is on disk.

Users' tokens reach it at ``/v1/...`` (role viewer or above); JobManagers, which proxy it for
any caller they verified, at ``/internal/v1/...`` with the cluster's internal credential (the
middleware lets that credential nowhere else, and nothing else there). Both answer the same:
the bytes from ``offset`` (or the last ``tail`` lines), following the attempt with
``follow=true``; 404 for an attempt that has no log here, 410 once the retention removed it
(:mod:`.files`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from steward.security.identity import Identity
from steward.security.roles import Action
from steward.wire.logs import LOG_MEDIA_TYPE, MAX_ATTEMPT, START_HEADER, LogQuery
from steward.wire.rest import ErrorBody

from .files import LogUnavailableError
from .state import Node, NodeDep

router = APIRouter(tags=["logs"])

_RESPONSES: dict[int | str, dict[str, object]] = {
    200: {"content": {"text/plain": {}}, "description": "the log's bytes"},
    400: {"model": ErrorBody},
    403: {"model": ErrorBody},
    404: {"model": ErrorBody},
    410: {"model": ErrorBody},
}
AttemptNumber = Annotated[int, Path(ge=1, le=MAX_ATTEMPT)]
# The same strict parameters as the JobManagers' log route: one it does not know is a 400
# naming it, not silently a plain read (a typo such as ?folow=true).
Part = Annotated[LogQuery, Query()]


@router.get(
    "/v1/attempts/{job_id}/{attempt}/log", response_class=StreamingResponse, responses=_RESPONSES
)
async def attempt_log(
    job_id: str,
    attempt: AttemptNumber,
    *,
    request: Request,
    node: NodeDep,
    query: Part,
) -> StreamingResponse:
    """An attempt's runner.log, for a user's token (viewer or above)."""
    caller = getattr(request.state, "identity", None)
    if not isinstance(caller, Identity) or not caller.may(Action.READ):
        who = f"{caller.name} (role {caller.role})" if isinstance(caller, Identity) else "caller"
        raise LogUnavailableError(403, "forbidden", f"{who} may not read logs")
    return await _answer(node, job_id, attempt, query)


@router.get(
    "/internal/v1/attempts/{job_id}/{attempt}/log",
    response_class=StreamingResponse,
    responses=_RESPONSES,
)
async def proxied_attempt_log(
    job_id: str,
    attempt: AttemptNumber,
    *,
    node: NodeDep,
    query: Part,
) -> StreamingResponse:
    """An attempt's runner.log, for a JobManager (the internal credential)."""
    return await _answer(node, job_id, attempt, query)


async def _answer(node: Node, job_id: str, attempt: int, query: LogQuery) -> StreamingResponse:
    found = await run_in_threadpool(
        lambda: node.logs.open(
            job_id, attempt, offset=query.offset, tail=query.tail, follow=query.follow
        )
    )
    return StreamingResponse(
        node.logs.stream(found),
        media_type=LOG_MEDIA_TYPE,
        headers={START_HEADER: str(found.start), "cache-control": "no-store"},
    )
