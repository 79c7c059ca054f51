"""``GET /metrics``: this TaskManager's metrics in the Prometheus text format (viewer or above).

What it serves is the TaskManager's :class:`~steward.metrics.TaskManagerMetrics`, which the
port puts on ``app.state.metrics``; its slots and session are read at the scrape.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from steward.metrics import CONTENT_TYPE, TaskManagerMetrics, exposition
from steward.security.identity import Identity
from steward.security.roles import Action

from .files import LogUnavailableError


def metrics(request: Request) -> Response:
    """This TaskManager's metrics (Prometheus text format); on a worker thread, as the
    snapshot it reads takes the TaskManager's locks."""
    caller = getattr(request.state, "identity", None)
    if not isinstance(caller, Identity) or not caller.may(Action.READ):
        who = f"{caller.name} (role {caller.role})" if isinstance(caller, Identity) else "caller"
        raise LogUnavailableError(403, "forbidden", f"{who} may not read metrics")
    served: TaskManagerMetrics | None = getattr(request.app.state, "metrics", None)
    if served is None:  # an app built without a TaskManager (a test's)
        served = TaskManagerMetrics()
    return Response(exposition(served.registry), media_type=CONTENT_TYPE)


ROUTES = (Route("/metrics", metrics, methods=["GET"]),)
