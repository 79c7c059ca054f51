"""``GET /v1/queues``: the queues (``scheduling.queues``), their use and their waiting jobs.

Only the leader knows them (its scheduler's latest pass); a standby asks it, as it forwards a
write, and answers 503 with Retry-After while there is no leader.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from steward.security.roles import Action
from steward.wire.queues import QueueList
from steward.wire.rest import ErrorBody

from .auth import Caller, require
from .forwarding import forward, leading
from .state import Backend, Forwarder

router = APIRouter(tags=["queues"])


@router.get(
    "/v1/queues",
    response_model=QueueList,
    responses={403: {"model": ErrorBody}, 503: {"model": ErrorBody}},
)
def queues(request: Request, caller: Caller, backend: Backend, forwarder: Forwarder) -> Response:
    """Each queue's shares, its jobs running and waiting, and the slots they hold."""
    require(caller, Action.READ)
    term = leading(backend)
    if term is None or not term.ready:
        return forward(backend, forwarder, request, b"")
    answer = term.queues().model_copy(update={"served_by": backend.id})
    return Response(answer.model_dump_json(), media_type="application/json")
