"""``/ui/login`` and ``/ui/logout``: the UI signs in with the same tokens as the API.

``GET /ui/login`` is public (with the probes and the sign-on's two legs, :mod:`.sign_on`): a
fixed form that tells nothing about the cluster, topped by "Sign in with <provider>" when
``security.oidc.issuer`` is set. ``POST /ui/login`` verifies the token it is given and stores it in
the cookie ``steward_token`` (HttpOnly: no script reads it; SameSite=Strict: no other site's
page sends it; Secure over https), which the auth middleware (:mod:`steward.security.asgi`)
takes as a credential. A cookie-authenticated request that changes something must carry
``X-Steward-Csrf: 1``, which the pages' scripts add and a form of another site cannot.

The form is answered with its stylesheet inline, because ``/ui/static/`` needs a credential;
the Content-Security-Policy admits that one style block by its hash and no script at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import logging
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from steward.errors import StewardError, UnmappedIdentityError
from steward.jobmanager.rest.auth import LOGIN_PAGE, SIGN_ON_PAGE
from steward.jobmanager.rest.state import services_of
from steward.security.asgi import COOKIE
from steward.security.rate_limits import Refusal, attempt_of

from .pages import FILES, PREFIX, SECURITY_HEADERS

log = logging.getLogger(__name__)

LOGOUT_PAGE: Final = PREFIX + "/logout"
MAX_FORM_BYTES: Final = 8192
"""A token is about 60 characters; a bigger form is refused unread."""
INVALID: Final = "invalid or expired token"

_STYLE: Final = FILES["app.css"][0].decode()
_STYLE_HASH: Final = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
_TEMPLATE: Final = (Path(__file__).parent / "login.html").read_text()
LOGIN_POLICY: Final = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The form's own policy: its one inline style block, no script, posts only to itself."""

router = APIRouter(include_in_schema=False)


def login_form(
    message: str = "", status_code: int = 200, *, sign_on: str | None = None
) -> HTMLResponse:
    """The form, with ``message`` (escaped) above it when there is one, and a link to sign in
    with the provider named ``sign_on`` when there is one."""
    notice = f'<p class="notice error" role="alert">{html.escape(message)}</p>' if message else ""
    link = (
        f'<a class="sign-on" href="{SIGN_ON_PAGE}">Sign in with {html.escape(sign_on)}</a>'
        '<p class="muted or">or with a token:</p>'
        if sign_on
        else ""
    )
    body = (
        _TEMPLATE.replace("{{style}}", _STYLE)
        .replace("{{message}}", notice)
        .replace("{{sign_on}}", link)
    )
    headers = {
        **SECURITY_HEADERS,
        "Content-Security-Policy": LOGIN_POLICY,
        "Cache-Control": "no-store",
    }
    return HTMLResponse(body, status_code=status_code, headers=headers)


@router.get(LOGIN_PAGE)
async def login_page(request: Request) -> HTMLResponse:
    return login_form(sign_on=provider_name(request))


def provider_name(request: Request) -> str | None:
    """The sign-on provider's name for the form's link, None when there is none."""
    provider = services_of(request).security.sign_on
    return provider.name if provider is not None else None


@router.post(LOGIN_PAGE)
async def login(request: Request) -> Response:
    """Verify the form's ``token``; on success store it in the cookie and go to the overview."""

    def refused(message: str, status_code: int) -> HTMLResponse:
        return login_form(message, status_code, sign_on=provider_name(request))

    if not _same_origin(request):
        return refused("this form must be sent from this JobManager's own page", 403)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return refused(INVALID, 401)
    token = _form_token(body)
    if not token:
        return refused("enter a token", 401)
    security = services_of(request).security
    secret = security.authenticator.internal_credential
    attempt = attempt_of(security.limiter, request.scope, token, secret)
    if attempt is not None and (refusal := attempt.refused()) is not None:
        return _refused(refusal)
    try:
        identity = await anyio.to_thread.run_sync(security.authenticator.verify, token)
    except UnmappedIdentityError as exc:
        return refused(str(exc), 403)
    except StewardError as exc:
        log.warning("cannot verify a token at login: %s", exc)
        return refused("cannot verify tokens right now (ZooKeeper); try again", 503)
    if identity is None or identity.internal:
        if attempt is not None:
            attempt.failed()
        return refused(INVALID, 401)
    answer = RedirectResponse(PREFIX + "/", status_code=303)
    set_session(answer, token, request)
    return answer


def set_session(answer: Response, token: str, request: Request) -> None:
    """The UI's session: the credential in the cookie the auth middleware takes."""
    answer.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


@router.post(LOGOUT_PAGE)
async def logout(request: Request) -> Response:
    """Forget the cookie (the middleware let this through: a valid cookie and the CSRF header)."""
    answer = Response(status_code=204)
    answer.delete_cookie(
        COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return answer


def _refused(refusal: Refusal) -> HTMLResponse:
    answer = login_form(refusal.message, 429)
    answer.headers.update(refusal.headers())
    return answer


def _form_token(body: bytes) -> str:
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        return ""
    values = fields.get("token") or [""]
    return values[0].strip()


def _same_origin(request: Request) -> bool:
    """A browser names the page that sent the form; another site's page may not sign a
    visitor in (with the attacker's token). No Origin header: not a browser, allowed."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")
