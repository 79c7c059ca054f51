"""``/healthz`` (the process answers) and ``/readyz`` (it can serve: connected, a leader known)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from steward.wire.rest import ErrorBody

from .backend import ApiBackend
from .errors import ApiError, no_leader
from .state import Backend

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(backend: Backend) -> dict[str, str]:
    """Alive: the process answers."""
    return {"status": "ok", "id": backend.id, "role": role(backend)}


@router.get("/readyz", responses={503: {"model": ErrorBody}})
def readyz(backend: Backend) -> dict[str, Any]:
    """Ready: connected to ZooKeeper and a leader is known (and, on the leader, recovered)."""
    if not backend.session.connected:
        raise ApiError(503, "not_ready", "not connected to ZooKeeper")
    if backend.leader() is None:
        raise no_leader()
    dispatcher = backend.dispatcher
    if dispatcher is not None and not dispatcher.ready:
        raise ApiError(503, "not_ready", "recovering jobs", headers={"Retry-After": "1"})
    return {"ready": True, "id": backend.id, "role": role(backend)}


def role(backend: ApiBackend) -> str:
    return "leader" if backend.is_leader else "standby"
