"""The TaskManagers' heartbeat (:data:`~steward.wire.heartbeat.HEARTBEAT_PATH`): reports in,
commands back. Only the leader takes heartbeats; a standby answers 409 ``not_leader`` naming
the leader it knows of, and the TaskManager turns to it. An internal caller's heartbeat is
answered before FastAPI (:mod:`.heartbeat_route`); this route answers the others the same way.
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import Response

from steward.errors import StewardError
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply
from steward.wire.rest import ErrorBody

from .backend import ApiBackend
from .bodies import bounded_body
from .cluster import leader_view
from .errors import ApiError
from .forwarding import leading
from .state import Backend, HeartbeatThreads

MAX_HEARTBEAT_BYTES = 16 << 20
"""A heartbeat's body: a report per attempt, each with a cause of at most 8 KiB of traceback
(a TaskManager of 100 slots sends under 2 MiB). Only the internal credential reaches this
route; the bound keeps a broken or compromised TaskManager from filling the leader's memory."""
HEARTBEAT_THREADS = 1024
"""Threads for TaskManager heartbeats (each may wait up to heartbeat.interval)."""

router = APIRouter(tags=["internal"])


@router.post(
    HEARTBEAT_PATH,
    responses={400: {"model": ErrorBody}, 409: {"model": ErrorBody}, 413: {"model": ErrorBody}},
)
async def heartbeat(request: Request, backend: Backend, threads: HeartbeatThreads) -> Response:
    """TaskManager heartbeat (see steward.wire.heartbeat): reports in, commands back."""
    body = await bounded_body(
        request, MAX_HEARTBEAT_BYTES, f"heartbeats are limited to {MAX_HEARTBEAT_BYTES} bytes"
    )
    # Heartbeats long-poll: they wait on their own threads, never on the pool that
    # serves the API (40 waiting TaskManagers would otherwise starve /healthz).
    response: Response = await anyio.to_thread.run_sync(
        lambda: answer_heartbeat(backend, body), limiter=threads
    )
    return response


def answer_heartbeat(backend: ApiBackend, body: bytes) -> Response:
    """The answer to a heartbeat's ``body`` (also :mod:`.heartbeat_route`'s)."""
    try:
        beat = Heartbeat.from_json(body)
    except StewardError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    dispatcher = leading(backend)
    if dispatcher is None:
        raise ApiError(
            409,
            "not_leader",
            f"{backend.id} is not the leader",
            leader=leader_view(backend.leader()),
        )
    reply: HeartbeatReply = dispatcher.heartbeat(beat)
    return Response(reply.to_json(), media_type="application/json")
