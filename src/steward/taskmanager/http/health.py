"""``/healthz`` (the process answers) and ``/readyz`` (it can run attempts): public probes."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from steward.wire.rest import ErrorBody

from .state import NodeDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(node: NodeDep) -> dict[str, str]:
    """Alive: the process answers."""
    return {"status": "ok", "id": node.id, "role": "taskmanager"}


@router.get("/readyz", responses={503: {"model": ErrorBody}})
def readyz(node: NodeDep) -> JSONResponse:
    """Ready: connected to ZooKeeper and not fencing itself."""
    why = node.ready()
    if why is not None:
        body = ErrorBody(code="not_ready", message=why)
        return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=503)
    return JSONResponse({"ready": True, "id": node.id, "role": "taskmanager"})
