"""The REST API's side of authentication: its public paths, the caller as a route
dependency, each route's role check (:func:`require`, 403), and the OpenAPI document's security
scheme. The middleware that refuses requests without credentials (401) is
:class:`steward.security.asgi.AuthMiddleware`, shared with the TaskManagers' HTTP port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, Request

from steward.security.asgi import PROBES, cookie_token
from steward.security.authenticator import Authenticator
from steward.security.identity import Identity
from steward.security.rate_limits import RateLimiter
from steward.security.roles import Action
from steward.security.sign_on import SignOn
from steward.security.source_address import FORWARDED_FOR
from steward.wire.tokens import TokenRecord

from .errors import ApiError

LOGIN_PAGE = "/ui/login"
SIGN_ON_PAGE = LOGIN_PAGE + "/oidc"
SIGN_ON_CALLBACK = LOGIN_PAGE + "/callback"
PUBLIC_PATHS = PROBES | {LOGIN_PAGE, SIGN_ON_PAGE, SIGN_ON_CALLBACK}
"""The only routes that answer without credentials: liveness and readiness probes, and the web
UI's login form (a fixed page; it tells nothing about the cluster) and the two legs of its
sign-in with the OpenID Connect provider (they answer 404 when none is configured)."""
SUBMISSION_PATHS = frozenset({"/v1/jobs", "/v1/jobs/batch", "/batches"})
"""The POST routes that submit jobs (Livy's ``/batches`` too): rate-limited per team."""


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
    client_certificates: bool = False
    """A verified client certificate is a credential (:mod:`steward.security.certificates`)."""
    sign_on: SignOn | None = None
    """The OpenID Connect provider, when ``security.oidc.issuer`` is set."""
    limiter: RateLimiter | None = None
    """Failed authentications and submissions (:mod:`steward.security.rate_limits`)."""


def identity_of(request: Request) -> Identity:
    """The caller the authentication middleware found (401 if none: never on a route)."""
    identity = getattr(request.state, "identity", None)
    if not isinstance(identity, Identity):  # never: the middleware sets it on every route
        raise ApiError(401, "unauthorized", "a valid bearer token is required")
    return identity


async def _caller(request: Request) -> Identity:
    return identity_of(request)


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
    """The caller's credential as an Authorization header: what a standby forwards to the
    leader. A browser's comes in the web UI's cookie (its CSRF header was checked here), and
    is forwarded as its bearer token, so the leader sees the same caller."""
    header = request.headers.get("authorization")
    if header is not None:
        return header
    token = cookie_token(request.scope)
    return f"Bearer {token}" if token is not None else None


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
            "description": "a Steward token (stw_...), or the sign-on provider's JWT access"
            " token when security.oidc.issuer is set; /internal/ takes the cluster's own",
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
