"""Authentication of every route of an HTTP server: an ASGI middleware, so that no route can
forget it. The JobManagers' REST API and the TaskManagers' HTTP port both sit behind it.

Every request but the server's public paths (the probes ``GET /healthz`` and ``GET /readyz``)
must carry ``Authorization: Bearer <token>``, or ``Basic`` with the token as the password (what
Livy's clients send); the OpenAPI document and ``/docs`` too, and paths that exist nowhere (a
stranger learns nothing, not even which job ids exist). A missing, unknown, revoked or expired
token (a Steward token, or a sign-on provider's JWT: :mod:`.oidc`) is answered 401 with
``WWW-Authenticate: Bearer`` before any route runs; a sign-on token whose groups map to no
role, 403. ``/internal/*`` takes only the cluster's internal credential, which no other route
takes (403 either way). What a verified caller may do is each route's own check (403): see
:mod:`steward.security.roles`. The caller reaches routes as ``request.state.identity``.

Two more credentials, each off unless the server asks for it:

- a client certificate (mutual TLS, for machines): with ``security.auth.client-certificates``,
  a certificate the TLS handshake verified against ``rest.ssl.ca`` names the caller (its subject's
  CN) and role (its O): :mod:`.certificates`. A bearer token, when one is sent, decides instead.
  A standby forwarding such a caller's write vouches for it with the internal credential
  (:mod:`.delegation`), which this middleware then takes as that caller.
- the web UI's cookie (``cookie=``): a browser sends the token it logged in with as the cookie
  :data:`COOKIE`. A request authenticated by it that could change something (any method but
  GET, HEAD and OPTIONS) must also carry :data:`CSRF_HEADER` (403 otherwise): a page of another
  site can make a browser send the cookie, but not a custom header. An unauthenticated GET of a
  page under ``login_page``'s folder is sent there (303) instead of answered 401.

With a ``limiter`` (:mod:`.rate_limits`), an address or credential that failed too often is
answered 429 with ``Retry-After`` before its credential is looked at, and a POST to one of
``submission_paths`` past its team's share too; the probes and the internal credential never.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie

import anyio.to_thread
from starlette.responses import JSONResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from steward.errors import StewardError, UnmappedIdentityError
from steward.security.scope_headers import header as _header
from steward.wire.rest import ErrorBody

from . import delegation
from .authenticator import LOOKUP, Authenticator
from .certificates import certificate_identity
from .identity import Identity
from .rate_limits import RateLimiter, Refusal, attempt_of

log = logging.getLogger(__name__)

PROBES = frozenset({"/healthz", "/readyz"})
"""Liveness and readiness probes: public on every server."""
INTERNAL_PREFIX = "/internal/"
RETRY_AFTER = "1"
"""Seconds a client should wait when credentials cannot be verified right now."""
COOKIE = "steward_token"
CSRF_HEADER = "x-steward-csrf"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class AuthMiddleware:
    """Refuses (401/403) any request without the right credential; hands routes the caller
    as ``request.state.identity``. Pure ASGI: request bodies stream through untouched."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        public_paths: Iterable[str] = PROBES,
        *,
        certificates: bool = False,
        cookie: bool = False,
        login_page: str | None = None,
        limiter: RateLimiter | None = None,
        submission_paths: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.public_paths = frozenset(public_paths)
        self.certificates = certificates
        self.cookie = cookie
        self.login_page = login_page
        self._pages = login_page.rsplit("/", 1)[0] + "/" if login_page else None
        self.limiter = limiter
        self.submission_paths = frozenset(submission_paths)
        """POST routes that submit jobs: counted per team (:mod:`.rate_limits`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        internal_route = scope["path"].startswith(INTERNAL_PREFIX)
        token, from_cookie = self._token(scope)
        secret = self.authenticator.internal_credential
        attempt = attempt_of(self.limiter, scope, token, secret)
        if attempt is not None and (refusal := attempt.refused()):
            await refuse(refusal)(scope, receive, send)
            return
        try:
            identity = await self._identify(scope, token, internal_route=internal_route)
        except UnmappedIdentityError as exc:  # a sign-on token whose groups grant nothing
            await answer(403, ErrorBody(code="forbidden", message=str(exc)), {})(
                scope, receive, send
            )
            return
        except StewardError as exc:
            log.warning("cannot verify a token: %s", exc)
            body = ErrorBody(code="unavailable", message="cannot verify credentials; retry")
            await answer(503, body, {"Retry-After": RETRY_AFTER})(scope, receive, send)
            return
        if identity is None and self._is_page(scope):
            assert self.login_page is not None
            await RedirectResponse(self.login_page, status_code=303)(scope, receive, send)
            return
        if identity is None:
            if attempt is not None:
                attempt.failed()
            body = ErrorBody(
                code="unauthorized",
                message="a valid bearer token is required (Authorization: Bearer <token>)",
            )
            await answer(401, body, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        if identity.internal != internal_route:
            message = (
                "/internal/ takes the cluster's internal credential only"
                if internal_route
                else "the cluster's internal credential is for /internal/ only"
            )
            body = ErrorBody(code="forbidden", message=message)
            await answer(403, body, {})(scope, receive, send)
            return
        if from_cookie and scope["method"] not in _SAFE_METHODS and not _header(scope, CSRF_HEADER):
            body = ErrorBody(
                code="forbidden",
                message=f"a request authenticated by the UI's cookie needs {CSRF_HEADER}: 1",
            )
            await answer(403, body, {})(scope, receive, send)
            return
        if (refusal := self._submission_refused(scope, identity)) is not None:
            await refuse(refusal)(scope, receive, send)
            return
        scope.setdefault("state", {})["identity"] = identity
        await self.app(scope, receive, send)

    def _submission_refused(self, scope: Scope, identity: Identity) -> Refusal | None:
        """A submission's first job counted before its body is read, so a flood is refused
        unread (a batch's other jobs are counted by its route, once it counted them)."""
        if self.limiter is None or identity.internal or scope["method"] != "POST":
            return None
        if scope["path"] not in self.submission_paths:
            return None
        return self.limiter.submitting(identity)

    def _token(self, scope: Scope) -> tuple[str | None, bool]:
        """The request's token, and whether it came in the UI's cookie."""
        token = bearer_token(scope)
        if token is None and self.cookie and _header(scope, "authorization") is None:
            from_cookie = cookie_token(scope)
            return from_cookie, from_cookie is not None
        return token, False

    def _is_page(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return (
            self._pages is not None
            and scope["method"] in ("GET", "HEAD")
            and (path.startswith(self._pages) or path == self._pages.rstrip("/"))
        )

    async def _identify(
        self, scope: Scope, token: str | None, *, internal_route: bool
    ) -> Identity | None:
        if not self.authenticator.enabled:
            return self.authenticator.anonymous(internal_route=internal_route)
        if token is None:
            if self.certificates and not internal_route:
                return certificate_identity(scope)
            return None
        quick = self.authenticator.cached(token)
        identity: Identity | None
        if quick is LOOKUP:
            identity = await anyio.to_thread.run_sync(self.authenticator.verify, token)
        else:
            identity = quick
        if identity is not None and identity.internal and not internal_route and self.certificates:
            # A standby vouching for a caller its client certificate named (forwarding).
            return delegation.asserted(scope) or identity
        return identity


def bearer_token(scope: Scope) -> str | None:
    """The token of the request's ``Authorization`` header, or None: ``Bearer <token>``, or
    ``Basic`` with the token as the password (the user name is not checked), which is what
    Livy's clients and curl's ``-u`` send."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "basic":
                token = _basic_password(token)
            elif scheme.lower() != "bearer":
                return None
            return token.strip() or None
    return None


def _basic_password(credentials: str) -> str:
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return ""
    return decoded.partition(":")[2]


def cookie_token(scope: Scope) -> str | None:
    """The token in the UI's cookie :data:`COOKIE`, or None."""
    header = _header(scope, "cookie")
    if header is None:
        return None
    cookies = SimpleCookie()
    try:
        cookies.load(header)
    except CookieError:
        return None
    morsel = cookies.get(COOKIE)
    return morsel.value.strip() or None if morsel is not None else None


def refuse(refusal: Refusal) -> JSONResponse:
    """A rate limit's answer: 429 with ``Retry-After``."""
    log.debug("rate limited kind=%s retry_after=%s", refusal.kind, refusal.retry_after)
    return answer(429, refusal.body(), refusal.headers())


def answer(status: int, body: ErrorBody, headers: dict[str, str]) -> JSONResponse:
    """An error answer of the middleware (the API's :class:`ErrorBody`)."""
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status, headers=headers
    )
