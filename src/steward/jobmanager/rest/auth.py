"""Authentication of every route: a middleware, so that no route can forget it.

Every request but ``GET /healthz`` and ``GET /readyz`` must carry ``Authorization: Bearer
<token>`` (the OpenAPI document and ``/docs`` too, and paths that exist nowhere: a stranger
learns nothing, not even which job ids exist). A missing, unknown, revoked or expired token is
answered 401 with ``WWW-Authenticate: Bearer`` before any route runs. ``/internal/*`` (the
TaskManagers' heartbeat) takes only the cluster's internal credential, which no other route
takes (403 either way). What a verified caller may do is each route's own check
(:func:`require`, 403): see :mod:`steward.security.roles`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from steward.errors import StewardError
from steward.security.authenticator import LOOKUP, Authenticator
from steward.security.identity import Identity
from steward.security.roles import Action
from steward.wire.rest import ErrorBody
from steward.wire.tokens import TokenRecord

from .errors import RETRY_AFTER, ApiError

log = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})
"""The only routes that answer without credentials: liveness and readiness probes."""
INTERNAL_PREFIX = "/internal/"
FORWARDED_FOR = "x-steward-forwarded-for"
"""Set by a standby that forwards a write: the address of the client it came from (audit)."""


class TokenRecords(Protocol):
    """Where tokens' records live (:class:`steward.store.tokens.TokenStore`)."""

    def create(self, record: TokenRecord) -> None: ...

    def records(self) -> list[TokenRecord]: ...

    def delete(self, token_id: str) -> bool: ...


@dataclass(frozen=True)
class ApiSecurity:
    """What the REST API authenticates with, and where token routes keep their records."""

    authenticator: Authenticator
    tokens: TokenRecords


class AuthMiddleware:
    """Refuses (401/403) any request without the right credential; hands routes the caller
    as ``request.state.identity``. Pure ASGI: request bodies stream through untouched."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        internal_route = scope["path"].startswith(INTERNAL_PREFIX)
        try:
            identity = await self._identify(scope, internal_route=internal_route)
        except StewardError as exc:
            log.warning("cannot verify a token: %s", exc)
            body = ErrorBody(code="unavailable", message="cannot verify credentials; retry")
            await _answer(503, body, {"Retry-After": RETRY_AFTER})(scope, receive, send)
            return
        if identity is None:
            body = ErrorBody(
                code="unauthorized",
                message="a valid bearer token is required (Authorization: Bearer <token>)",
            )
            await _answer(401, body, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        if identity.internal != internal_route:
            message = (
                "/internal/ takes the cluster's internal credential only"
                if internal_route
                else "the cluster's internal credential is for /internal/ only"
            )
            body = ErrorBody(code="forbidden", message=message)
            await _answer(403, body, {})(scope, receive, send)
            return
        scope.setdefault("state", {})["identity"] = identity
        await self.app(scope, receive, send)

    async def _identify(self, scope: Scope, *, internal_route: bool) -> Identity | None:
        token = bearer_token(scope)
        if token is None or not self.authenticator.enabled:
            return self.authenticator.anonymous(internal_route=internal_route)
        quick = self.authenticator.cached(token)
        if quick is not LOOKUP:
            return quick
        identity: Identity | None = await anyio.to_thread.run_sync(self.authenticator.verify, token)
        return identity


def bearer_token(scope: Scope) -> str | None:
    """The token of the request's ``Authorization: Bearer`` header, or None."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


def _answer(status: int, body: ErrorBody, headers: dict[str, str]) -> JSONResponse:
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status, headers=headers
    )


async def _caller(request: Request) -> Identity:
    identity = getattr(request.state, "identity", None)
    if not isinstance(identity, Identity):  # never: the middleware sets it on every route
        raise ApiError(401, "unauthorized", "a valid bearer token is required")
    return identity


Caller = Annotated[Identity, Depends(_caller)]


def require(caller: Identity, action: Action) -> None:
    """403 unless ``caller``'s role may do ``action``."""
    if not caller.may(action):
        raise ApiError(
            403, "forbidden", f"{caller.name} (role {caller.role}) may not {action.value}"
        )


def client_address(request: Request) -> str | None:
    """Where the request came from, for the audit log (a standby's forward says whose)."""
    peer = f"{request.client.host}:{request.client.port}" if request.client else None
    forwarded = request.headers.get(FORWARDED_FOR)
    return f"{forwarded[:100]} via {peer}" if forwarded else peer


def authorization(request: Request) -> str | None:
    """The caller's own Authorization header: what a standby forwards to the leader."""
    return request.headers.get("authorization")


def document(app: FastAPI) -> None:
    """The OpenAPI document says it too: a bearer scheme on every operation but the public
    probes, each of which may answer 401 (and 403, for a role or the wrong credential)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "a Steward token (stw_...); /internal/ takes the cluster's own",
        }
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
        for path, operations in schema.get("paths", {}).items():
            if path in PUBLIC_PATHS:
                continue
            for operation in operations.values():
                operation["security"] = [{"bearer": []}]
                responses = operation.setdefault("responses", {})
                responses.setdefault("401", {"description": "no valid token", "content": error})
                responses.setdefault("403", {"description": "not allowed", "content": error})
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
