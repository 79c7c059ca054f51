"""Routes answered before FastAPI's routing: the few hot ones, on a lean path.

:class:`DirectRoutes` is a middleware just inside the authentication middleware
(:class:`steward.security.asgi.AuthMiddleware`), so every request it answers has been
authenticated and rate-limited like any other and carries its caller. It answers the
``(method, path)`` pairs it was given with their handler and passes everything else on to
FastAPI. What the lean path skips is FastAPI's per-request machinery: matching the path
against every route, solving the dependencies, the exception middleware's wrappers around
the answer. Under 16 submitting clients that machinery was a third of the leader's HTTP cost.

A handler is ``async (Request) -> Response`` and must behave as the FastAPI route of the same
path would (which stays registered, for the OpenAPI document, and delegates to the handler):
an :class:`~.errors.ApiError` it raises is answered by :func:`.errors.error_response`, a
:class:`~steward.errors.StewardError` as :func:`.errors.raise_for` maps it, exactly as the
app's error handlers answer them; anything else reaches FastAPI's server-error middleware.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from steward.errors import StewardError

from .errors import ApiError, error_response, raise_for

Handler = Callable[[Request], Awaitable[Response]]


class DirectRoutes:
    """Answers ``routes`` (``{(method, path): handler}``) itself; the rest goes to ``app``."""

    def __init__(self, app: ASGIApp, routes: Mapping[tuple[str, str], Handler]) -> None:
        self.app = app
        self.routes = dict(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = None
        if scope["type"] == "http":
            handler = self.routes.get((scope["method"], scope["path"]))
        if handler is None:
            await self.app(scope, receive, send)
            return
        response = await _answer(handler, Request(scope, receive))
        await response(scope, receive, send)


async def _answer(handler: Handler, request: Request) -> Response:
    try:
        try:
            return await handler(request)
        except StewardError as exc:
            raise_for(exc)
    except ApiError as exc:
        return error_response(exc)
