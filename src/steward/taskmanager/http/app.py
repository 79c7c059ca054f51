"""The TaskManager's HTTP app: its routes, behind authentication on every route but the
probes.

Starlette, not FastAPI: this port has five routes, no request body and no public OpenAPI
document, and FastAPI's import was a third of a TaskManager's start-up CPU
(docs/performance.md, "Start-up cost"). Routes come from :data:`ROUTES`, one list: a new one
is one line there.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from steward.security.asgi import PROBES, AuthMiddleware
from steward.security.authenticator import Authenticator

from . import health, logs, metrics
from .errors import EXCEPTION_HANDLERS
from .state import Node

ROUTES: tuple[BaseRoute, ...] = (*health.ROUTES, *logs.ROUTES, *metrics.ROUTES)
"""Every route of the TaskManager's port."""


def create_app(
    node: Node, authenticator: Authenticator, *, certificates: bool = False
) -> Starlette:
    """The app of ``node``; ``certificates``: a verified client certificate is a credential."""
    # Around everything, unknown paths included.
    auth = Middleware(
        AuthMiddleware, authenticator=authenticator, public_paths=PROBES, certificates=certificates
    )
    app = Starlette(
        routes=list(ROUTES), middleware=[auth], exception_handlers=dict(EXCEPTION_HANDLERS)
    )
    app.state.node = node
    return app
