"""Sign-on tokens: an OpenID Connect provider's JWT access tokens as API credentials.

A token is taken only if all hold (else None: 401): its header's ``alg`` is one of
``security.oidc.algorithms`` (public-key ones only: never ``none``, never HS* with a public key
as the secret), the key its ``kid`` names is one of the provider's (:mod:`.oidc_keys`) and of
that algorithm, the signature verifies, ``iss`` is the configured issuer, ``aud`` contains the
configured audience, and ``exp`` (required) is not past, ``nbf`` and ``iat`` not future, each
within ``security.oidc.leeway``. The claims then name the caller (:mod:`.oidc_claims`).
PyJWT does the checking: a well-kept library, not code of our own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from .identity import Identity
from .oidc_claims import ClaimMapping
from .oidc_keys import SigningKeys

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenRules:
    """What a token must say to be taken."""

    issuer: str
    audience: str
    algorithms: tuple[str, ...]
    leeway: float


class TokenVerifier:
    """Verifies sign-on tokens against the provider's keys and names their callers."""

    def __init__(self, rules: TokenRules, keys: SigningKeys, mapping: ClaimMapping) -> None:
        self.rules = rules
        self._keys = keys
        self._mapping = mapping

    def identity(self, token: str) -> Identity | None:
        """The caller ``token`` names, or None (not a valid token of the provider's); raises
        :class:`~steward.errors.UnmappedIdentityError` (no role) or
        :class:`~steward.errors.IdentityProviderError` (its keys cannot be read: retry)."""
        claims = self.claims(token, audience=self.rules.audience)
        return None if claims is None else self._mapping.identity(claims)

    def claims(
        self, token: str, *, audience: str, nonce: str | None = None
    ) -> Mapping[str, Any] | None:
        """The verified claims of ``token`` for ``audience`` (and ``nonce``, for an ID token),
        or None."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in self.rules.algorithms or not isinstance(kid, (str, type(None))):
            log.info("sign-on token refused reason=algorithm alg=%.20r", algorithm)
            return None
        key = self._keys.key(kid)
        if key is None:
            log.info("sign-on token refused reason=unknown-key kid=%.80r", kid)
            return None
        return self._decode(token, key.key, algorithm, audience, nonce)

    def _decode(
        self, token: str, key: Any, algorithm: str, audience: str, nonce: str | None
    ) -> Mapping[str, Any] | None:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=audience,
                issuer=self.rules.issuer,
                leeway=self.rules.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidTokenError as exc:
            log.info("sign-on token refused reason=%s", type(exc).__name__)
            return None
        if nonce is not None and claims.get("nonce") != nonce:
            log.info("sign-on token refused reason=nonce")
            return None
        return claims
