"""What every router is handed: the backend and the services built around it, in app state.

:func:`install` puts one :class:`Services` on ``app.state``; the routes ask for its parts as
FastAPI dependencies (``backend: Backend``, ``contents: Contents``...). The dependencies read
only the request, so they add nothing to the OpenAPI document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import anyio
import httpx
from fastapi import Depends, FastAPI, Request

from steward.store.contents import ContentStore

from .auth import ApiSecurity
from .backend import ApiBackend


@dataclass(frozen=True)
class Services:
    backend: ApiBackend
    contents: ContentStore
    forwarder: httpx.Client
    """Carries a standby's writes to the leader (:mod:`.forwarding`)."""
    heartbeat_threads: anyio.CapacityLimiter
    """Threads for TaskManager heartbeats, apart from the pool that serves the rest."""
    security: ApiSecurity
    """The authenticator (also the middleware's) and the tokens' records."""


def install(app: FastAPI, services: Services) -> None:
    app.state.services = services


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


# async: resolved on the event loop, never taking a thread of the pool the routes run on.
async def _backend(request: Request) -> ApiBackend:
    return services_of(request).backend


async def _contents(request: Request) -> ContentStore:
    return services_of(request).contents


async def _forwarder(request: Request) -> httpx.Client:
    return services_of(request).forwarder


async def _heartbeat_threads(request: Request) -> anyio.CapacityLimiter:
    return services_of(request).heartbeat_threads


async def _security(request: Request) -> ApiSecurity:
    return services_of(request).security


Backend = Annotated[ApiBackend, Depends(_backend)]
Contents = Annotated[ContentStore, Depends(_contents)]
Forwarder = Annotated[httpx.Client, Depends(_forwarder)]
HeartbeatThreads = Annotated[anyio.CapacityLimiter, Depends(_heartbeat_threads)]
Security = Annotated[ApiSecurity, Depends(_security)]
