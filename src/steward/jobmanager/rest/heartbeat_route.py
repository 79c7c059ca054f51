"""The heartbeat's lean path: ``POST`` :data:`~steward.wire.heartbeat.HEARTBEAT_PATH` answered
before FastAPI, for the one caller that sends it many times a second.

1,000 TaskManagers heartbeat once a second each; through FastAPI every heartbeat paid its
middleware (error telemetry, body limit, authentication, exception and exit-stack layers), a
walk of every route and the dependency injection: about as much CPU as the leader's own work
on the reports. This ASGI layer, the outermost of the app (:class:`LeanApi`), takes a heartbeat
itself only when its ``Authorization`` carries the cluster's internal credential (compared in
constant time, as the authentication middleware does; or when authentication is off, where
that middleware lets every ``/internal/`` request through as internal). Everything else, a
wrong or missing credential included, goes through the full stack unchanged, so refusals (401,
403, 429), their rate limits and their logs stay the middleware's. What the lean path answers
is what :mod:`.internal`'s route answers: the same reply, the same ``ErrorBody`` for a body too
large (413), unreadable (400) or sent to a standby (409); that route stays, for the OpenAPI
document and for a caller the lean path passes on.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from steward.security.asgi import bearer_token
from steward.security.authenticator import Authenticator
from steward.security.rate_limits import is_internal
from steward.wire.heartbeat import HEARTBEAT_PATH

from .backend import ApiBackend
from .errors import ApiError
from .internal import MAX_HEARTBEAT_BYTES, answer_heartbeat


class LeanApi(FastAPI):
    """A FastAPI app whose outermost layer is :class:`HeartbeatRoute` once :meth:`lean` is
    called: the app stays a FastAPI (routes, OpenAPI document, tests' clients)."""

    _lean: Callable[[ASGIApp], ASGIApp] | None = None

    def lean(
        self, backend: ApiBackend, authenticator: Authenticator, threads: anyio.CapacityLimiter
    ) -> None:
        self._lean = lambda app: HeartbeatRoute(app, backend, authenticator, threads)

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return stack if self._lean is None else self._lean(stack)


class HeartbeatRoute:
    """Answers an internal caller's heartbeat; passes every other request to ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        backend: ApiBackend,
        authenticator: Authenticator,
        threads: anyio.CapacityLimiter,
    ) -> None:
        self.app = app
        self._backend = backend
        self._authenticator = authenticator
        self._threads = threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._takes(scope):
            await self.app(scope, receive, send)
            return
        try:
            body = await _bounded_body(scope, receive)
            response = await answer_heartbeat(self._backend, body, self._threads)
        except ApiError as exc:
            response = _error(exc)
        await response(scope, receive, send)

    def _takes(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["path"] != HEARTBEAT_PATH or scope["method"] != "POST":
            return False
        if not self._authenticator.enabled:
            return True
        token = bearer_token(scope)
        return token is not None and is_internal(token, self._authenticator.internal_credential)


async def _bounded_body(scope: Scope, receive: Receive) -> bytes:
    """The body, refused (413) as soon as it is known to exceed :data:`MAX_HEARTBEAT_BYTES`."""
    declared = _content_length(scope)
    if declared is not None and declared > MAX_HEARTBEAT_BYTES:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "client_disconnected", f"{_LIMIT}: the client went away")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_HEARTBEAT_BYTES:
            raise _too_large()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_LIMIT = f"heartbeats are limited to {MAX_HEARTBEAT_BYTES} bytes"


def _too_large() -> ApiError:
    # Built only when needed: an ApiError (a pydantic body) per heartbeat was a fifth of the
    # lean route's CPU. Closing the connection stops the upload (the server would read and
    # drop the rest).
    return ApiError(413, "too_large", _LIMIT, headers={"Connection": "close"})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _error(exc: ApiError) -> JSONResponse:
    """The ``ErrorBody`` answer the app's handler of :class:`ApiError` gives."""
    return JSONResponse(
        exc.body.model_dump(mode="json", exclude_none=True),
        status_code=exc.status,
        headers=exc.headers,
    )
