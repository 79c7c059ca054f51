"""``/healthz`` (the process answers) and ``/readyz`` (it can serve, and take over).

A leader is ready once it has recovered. A standby is ready once it could take over a crash
of the leader at once (:meth:`~.backend.ApiBackend.takeover_blocker`): callers that kill a
leader as soon as every JobManager is ready (benchmarks, chaos runs, operators' scripts) must
not get a takeover that waits for the session timeout.
"""

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
    """Ready: connected to ZooKeeper and a leader is known; on the leader, recovered; on a
    standby, able to take over a crash of the leader at once."""
    if not backend.session.connected:
        raise ApiError(503, "not_ready", "not connected to ZooKeeper")
    if backend.leader() is None:
        raise no_leader()
    dispatcher = backend.dispatcher
    if dispatcher is not None and not dispatcher.ready:
        raise ApiError(503, "not_ready", "recovering jobs", headers={"Retry-After": "1"})
    blocker = None if backend.is_leader else backend.takeover_blocker()
    if blocker is not None:
        raise ApiError(503, "not_ready", blocker, headers={"Retry-After": "1"})
    return {"ready": True, "id": backend.id, "role": role(backend)}


def role(backend: ApiBackend) -> str:
    return "leader" if backend.is_leader else "standby"
