"""``/healthz`` (the process answers) and ``/readyz`` (it can run attempts): public probes."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .errors import error_answer
from .state import node_of


# Both read two flags and never block: answered on the event loop, so a probe does not wait
# for a worker thread that slow log reads may hold.
async def healthz(request: Request) -> JSONResponse:
    """Alive: the process answers."""
    return JSONResponse({"status": "ok", "id": node_of(request).id, "role": "taskmanager"})


async def readyz(request: Request) -> JSONResponse:
    """Ready: connected to ZooKeeper and not fencing itself."""
    node = node_of(request)
    why = node.ready()
    if why is not None:
        return error_answer(503, "not_ready", why)
    return JSONResponse({"ready": True, "id": node.id, "role": "taskmanager"})


ROUTES = (
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
)
