"""The web UI's sign-in with the OpenID Connect provider: the authorization code flow with PKCE,
``state`` and ``nonce`` (RFC 6749, RFC 7636, OpenID Connect Core 3.1).

:meth:`SignOn.begin` makes a fresh ``state`` (binds the provider's answer to this browser),
``nonce`` (binds the ID token to this sign-in) and PKCE verifier (only who holds it can redeem
the code), and the provider's authorization URL. The three travel in a short-lived HttpOnly
cookie of the browser that started, not in the JobManager's memory: any JobManager can finish
a sign-in another began. :meth:`SignOn.finish` redeems the code (with the verifier, and the
client's secret when there is one), checks the ID token (signature, issuer, ``aud`` = the
client id, ``nonce``) and returns the access token with the caller it names: the UI keeps that
token in its session cookie, where the API takes it as any bearer token.

:func:`sign_on` builds it from ``security.oidc.*`` and refuses (a clear
:class:`~steward.errors.ConfigurationError` at start) a combination that cannot work.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

import httpx

from steward.config import OidcSettings
from steward.errors import ConfigurationError, IdentityProviderError

from .credentials import read_secret
from .identity import Identity
from .oidc_claims import ClaimMapping

if TYPE_CHECKING:
    from .oidc import TokenVerifier
    from .oidc_keys import Discovery

log = logging.getLogger(__name__)

SECRET_KEY = "security.oidc.client-secret-file"
_RANDOM_BYTES = 32


@dataclass(frozen=True)
class LoginAttempt:
    """One browser's sign-in in progress: what it must show again when the provider sends it
    back. Each value is urlsafe base64, so ``.`` separates them in the cookie."""

    state: str
    nonce: str
    verifier: str

    @classmethod
    def new(cls) -> LoginAttempt:
        return cls(*(secrets.token_urlsafe(_RANDOM_BYTES) for _ in range(3)))

    def cookie_value(self) -> str:
        return f"{self.state}.{self.nonce}.{self.verifier}"

    @classmethod
    def from_cookie(cls, value: str | None) -> LoginAttempt | None:
        parts = (value or "").split(".")
        if len(parts) != 3 or not all(16 <= len(part) <= 128 for part in parts):
            return None
        return cls(*parts)

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class SignOn:
    """The provider, as the API (:attr:`verifier`) and the UI's sign-in see it."""

    def __init__(self, settings: OidcSettings, secret: str | None, http: httpx.Client) -> None:
        # Imported here: jwt and cryptography cost every JobManager start ~0.1 s of CPU, and
        # only one with sign-on configured makes a SignOn.
        from .oidc import TokenRules, TokenVerifier
        from .oidc_keys import TIMEOUT, Discovery, SigningKeys

        self.settings = settings
        self.name = settings.display_name or urlsplit(settings.issuer).hostname or "sign-on"
        self._secret = secret
        self._http = http
        self._timeout = TIMEOUT
        self.discovery: Discovery = Discovery(settings.issuer, http)
        keys = SigningKeys(self.discovery, http, refresh_floor=settings.jwks_refresh_floor)
        rules = TokenRules(
            settings.issuer,
            settings.audience or settings.client_id,
            settings.algorithms,
            settings.leeway,
        )
        mapping = ClaimMapping(
            settings.user_claim, settings.groups_claim, settings.group_roles, settings.group_teams
        )
        self.verifier: TokenVerifier = TokenVerifier(rules, keys, mapping)

    def begin(self, redirect_uri: str) -> tuple[str, LoginAttempt]:
        """The provider's authorization URL to send the browser to, and what to remember."""
        attempt = LoginAttempt.new()
        scopes = self.settings.scopes.split()
        query = {
            "response_type": "code",
            "client_id": self.settings.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(scopes if "openid" in scopes else ["openid", *scopes]),
            "state": attempt.state,
            "nonce": attempt.nonce,
            "code_challenge": attempt.challenge,
            "code_challenge_method": "S256",
        }
        endpoint = self.discovery.metadata().authorization_endpoint
        joiner = "&" if "?" in endpoint else "?"  # some providers name a policy in its query
        return f"{endpoint}{joiner}{urlencode(query)}", attempt

    def finish(
        self, code: str, attempt: LoginAttempt, redirect_uri: str
    ) -> tuple[str, Identity] | None:
        """Redeem ``code``: the access token and its caller, or None when the provider's
        answer does not verify; raises UnmappedIdentityError (no role) or
        IdentityProviderError (the provider failed: retry)."""
        tokens = self._redeem(code, attempt, redirect_uri)
        if tokens is None:
            return None
        access, id_token = tokens.get("access_token"), tokens.get("id_token")
        if not isinstance(access, str) or not isinstance(id_token, str):
            raise IdentityProviderError(
                "the token endpoint's answer lacks access_token or id_token"
            )
        claims = self.verifier.claims(
            id_token, audience=self.settings.client_id, nonce=attempt.nonce
        )
        if claims is None:
            return None
        identity = self.verifier.identity(access)
        return None if identity is None else (access, identity)

    def _redeem(
        self, code: str, attempt: LoginAttempt, redirect_uri: str
    ) -> dict[str, object] | None:
        """The token endpoint's answer; None when it refused the code (a verdict, not an
        outage: an expired, reused or forged code)."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": attempt.verifier,
            "client_id": self.settings.client_id,
        }
        # client_secret_basic for a confidential client; a public one proves itself by PKCE.
        auth = (
            httpx.BasicAuth(self.settings.client_id, self._secret) if self._secret else httpx.Auth()
        )
        endpoint = self.discovery.metadata().token_endpoint
        try:
            answer = self._http.post(endpoint, data=form, auth=auth, timeout=self._timeout)
            body = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise IdentityProviderError(f"the token endpoint {endpoint} failed: {exc}") from exc
        if answer.status_code != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            log.warning("sign-on code refused status=%s error=%.80r", answer.status_code, error)
            return None
        return body

    def close(self) -> None:
        self._http.close()


def sign_on(settings: OidcSettings) -> SignOn | None:
    """The provider ``security.oidc.*`` configures, None when it is off; a clear error for a
    combination that cannot work."""
    if not settings.enabled:
        return None
    if not settings.client_id:
        raise ConfigurationError(
            "security.oidc.client-id is not set: sign-on needs Steward's client id at"
            f" {settings.issuer}",
            key="security.oidc.client-id",
        )
    if not settings.group_roles:
        raise ConfigurationError(
            "security.oidc.group-roles is empty: with sign-on on, map at least one of the"
            " provider's groups to a role (e.g. steward-admins=admin), or nobody gets in",
            key="security.oidc.group-roles",
        )
    secret = None
    if settings.client_secret_file is not None:
        secret = read_secret(settings.client_secret_file, SECRET_KEY)
    http = httpx.Client(verify=_verify(settings.ca), follow_redirects=False)
    return SignOn(settings, secret, http)


def _verify(ca: Path | None) -> ssl.SSLContext | bool:
    """The provider's TLS is verified: against ``security.oidc.ca``, else the system's CAs."""
    if ca is None:
        return True
    try:
        return ssl.create_default_context(cafile=str(ca))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(
            f"security.oidc.ca: cannot read {ca} as a PEM CA bundle: {exc}", key="security.oidc.ca"
        ) from exc
