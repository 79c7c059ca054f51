"""The TaskManager's HTTP app: its routers, behind authentication on every route but the
probes.

Routers come from :data:`ROUTERS`, one list: a new one (``/metrics``, say) is one line there.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from steward.security.asgi import PROBES, AuthMiddleware
from steward.security.authenticator import Authenticator

from . import health, logs, metrics
from .errors import add_error_handlers
from .state import Node

ROUTERS: tuple[APIRouter, ...] = (health.router, logs.router, metrics.router)
"""Every router of the TaskManager's port, in the OpenAPI document's order."""


def create_app(node: Node, authenticator: Authenticator, *, certificates: bool = False) -> FastAPI:
    """The app of ``node``; ``certificates``: a verified client certificate is a credential."""
    app = FastAPI(
        title="Steward TaskManager",
        summary="A TaskManager's attempts' logs and probes",
        version="1",
    )
    app.state.node = node
    add_error_handlers(app)
    # Around everything, the OpenAPI document and unknown paths included.
    app.add_middleware(
        AuthMiddleware,
        authenticator=authenticator,
        public_paths=PROBES,
        certificates=certificates,
    )
    for router in ROUTERS:
        app.include_router(router)
    return app
