"""``/ui/login/oidc`` and ``/ui/login/callback``: the web UI signs in with the OpenID Connect
provider (:mod:`steward.security.sign_on` does the protocol; these routes do the browser's side).

Both are public (the browser has no credential yet) and answer 404 without a provider. The
first sends the browser to the provider with a fresh state, nonce and PKCE challenge, which it
remembers in the cookie :data:`ATTEMPT_COOKIE` (HttpOnly, SameSite=Lax so that the provider's
redirect back brings it, scoped to the callback's path, ten minutes). The callback accepts only
the state of that cookie, redeems the code, and stores the access token in the UI's session
cookie (the same as a token's login, :func:`.login.set_session`).

The callback answers a page that moves on to ``/ui/`` by itself rather than a redirect: the
browser arrived from the provider's site, and a redirect would still be part of that
cross-site navigation, on which a browser withholds the SameSite=Strict session cookie.
"""

from __future__ import annotations

import hmac
import logging
from typing import Final

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from steward.errors import StewardError, UnmappedIdentityError
from steward.jobmanager.rest.auth import SIGN_ON_CALLBACK, SIGN_ON_PAGE, client_address
from steward.jobmanager.rest.errors import ApiError
from steward.jobmanager.rest.state import services_of
from steward.security import audit
from steward.security.sign_on import LoginAttempt, SignOn

from .login import LOGIN_POLICY, login_form, set_session
from .pages import PREFIX, SECURITY_HEADERS

log = logging.getLogger(__name__)

ATTEMPT_COOKIE: Final = "steward_sign_on"
ATTEMPT_AGE: Final = 600
"""Seconds a browser may take at the provider before its sign-in must start again."""
MAX_COOKIE_TOKEN: Final = 3800
"""Browsers drop a cookie over 4096 bytes silently (a sign-in loop): say so instead. A token
with hundreds of groups in it gets there."""
SIGNED_IN: Final = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    f'<meta http-equiv="refresh" content="0;url={PREFIX}/"><title>Signed in · Steward</title>'
    f'</head><body><p><a href="{PREFIX}/">Continue to Steward</a></p></body></html>'
)

router = APIRouter(include_in_schema=False)


def _provider(request: Request) -> SignOn:
    provider = services_of(request).security.sign_on
    if provider is None:
        raise ApiError(404, "not_found", "sign-on is not configured (security.oidc.issuer)")
    return provider


def _redirect_uri(request: Request, provider: SignOn) -> str:
    configured = provider.settings.redirect_uri
    return configured or str(request.base_url).rstrip("/") + SIGN_ON_CALLBACK


@router.get(SIGN_ON_PAGE)
async def begin(request: Request) -> Response:
    """Send the browser to the provider, remembering the attempt in its cookie."""
    provider = _provider(request)
    try:
        url, attempt = await anyio.to_thread.run_sync(
            provider.begin, _redirect_uri(request, provider)
        )
    except StewardError as exc:
        log.warning("sign-on cannot start provider=%s error=%s", provider.name, exc)
        return login_form(f"cannot reach {provider.name} right now; try again", 503)
    answer = RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})
    answer.set_cookie(
        ATTEMPT_COOKIE,
        attempt.cookie_value(),
        max_age=ATTEMPT_AGE,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path=SIGN_ON_CALLBACK,
    )
    return answer


@router.get(SIGN_ON_CALLBACK)
async def callback(request: Request) -> Response:
    """Finish the attempt the cookie remembers: check the state, redeem the code, sign in."""
    provider = _provider(request)

    def refused(message: str, status_code: int) -> HTMLResponse:
        return login_form(message, status_code, sign_on=provider.name)

    query = request.query_params
    attempt = LoginAttempt.from_cookie(request.cookies.get(ATTEMPT_COOKIE))
    if "error" in query:
        return refused(f"{provider.name} did not sign you in: {query['error'][:100]}", 401)
    state, code = query.get("state", ""), query.get("code", "")
    if attempt is None or not hmac.compare_digest(state.encode(), attempt.state.encode()):
        return refused("this sign-in expired or was not started in this browser; try again", 400)
    try:
        result = await anyio.to_thread.run_sync(
            provider.finish, code, attempt, _redirect_uri(request, provider)
        )
    except UnmappedIdentityError as exc:
        return refused(str(exc), 403)
    except StewardError as exc:
        log.warning("sign-on cannot finish provider=%s error=%s", provider.name, exc)
        return refused(f"cannot reach {provider.name} right now; try again", 503)
    if result is None:
        return refused(f"{provider.name}'s answer did not verify; try again", 401)
    token, identity = result
    if len(token) > MAX_COOKIE_TOKEN:
        return refused(
            f"{provider.name}'s access token is {len(token)} bytes, too large for a browser"
            " cookie: have the provider put fewer groups in it (only Steward's)",
            400,
        )
    audit.record("sign-in", identity, client=client_address(request), via=provider.name)
    return _signed_in(token, request)


def _signed_in(token: str, request: Request) -> HTMLResponse:
    headers = {**SECURITY_HEADERS, "Content-Security-Policy": LOGIN_POLICY}
    answer = HTMLResponse(SIGNED_IN, headers={**headers, "Cache-Control": "no-store"})
    set_session(answer, token, request)
    answer.delete_cookie(ATTEMPT_COOKIE, path=SIGN_ON_CALLBACK, httponly=True, samesite="lax")
    return answer
