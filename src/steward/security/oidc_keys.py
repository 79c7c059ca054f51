"""The provider's discovery document and signing keys, fetched over HTTPS and cached.

The discovery document (``<issuer>/.well-known/openid-configuration``) is read once, on first
need (a JobManager starts even while the provider is down; sign-on answers 503 until it is
back), and must name the configured issuer. The keys (its ``jwks_uri``) are cached and read
again every :data:`MAX_AGE` seconds, or at once when a token names a key id the cache lacks,
but never twice within ``refresh_floor`` seconds: a rotated key is taken without a restart,
and a stream of forged key ids costs the provider one request per floor. A failed fetch of a
key that is needed is :class:`~steward.errors.IdentityProviderError` (503: retry), never a
verdict on a token; a failed hourly refresh keeps the keys already known.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKSetError

from steward.errors import IdentityProviderError

log = logging.getLogger(__name__)

MAX_AGE = 3600.0
"""Seconds the keys are trusted before they are read again anyway."""
TIMEOUT = 10.0
MAX_DOCUMENT = 256 * 1024


@dataclass(frozen=True)
class ProviderMetadata:
    """What Steward uses of the discovery document."""

    issuer: str
    jwks_uri: str
    authorization_endpoint: str
    token_endpoint: str


def fetch_json(http: httpx.Client, url: str) -> dict[str, Any]:
    """A JSON object from the provider, or :class:`IdentityProviderError`."""
    try:
        answer = http.get(url, timeout=TIMEOUT)
        answer.raise_for_status()
        if len(answer.content) > MAX_DOCUMENT:
            raise IdentityProviderError(f"{url}: answer larger than {MAX_DOCUMENT} bytes")
        body = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise IdentityProviderError(f"the sign-on provider at {url} failed: {exc}") from exc
    if not isinstance(body, dict):
        raise IdentityProviderError(f"{url}: not a JSON object")
    return body


class Discovery:
    """The provider's metadata, fetched on first use and then kept."""

    def __init__(self, issuer: str, http: httpx.Client) -> None:
        self.issuer = issuer
        self._http = http
        self._metadata: ProviderMetadata | None = None
        self._lock = threading.Lock()

    def metadata(self) -> ProviderMetadata:
        with self._lock:
            if self._metadata is None:
                self._metadata = self._fetch()
            return self._metadata

    def _fetch(self) -> ProviderMetadata:
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        body = fetch_json(self._http, url)
        if body.get("issuer") != self.issuer:
            raise IdentityProviderError(
                f"{url} names issuer {body.get('issuer')!r}, not {self.issuer!r}"
                " (security.oidc.issuer must be the provider's exact issuer)"
            )
        fields = ("jwks_uri", "authorization_endpoint", "token_endpoint")
        values = [body.get(field) for field in fields]
        if not all(isinstance(value, str) and value for value in values):
            raise IdentityProviderError(f"{url} lacks one of {', '.join(fields)}")
        log.info("sign-on provider discovered issuer=%s", self.issuer)
        return ProviderMetadata(self.issuer, *(str(value) for value in values))


class SigningKeys:
    """The provider's public keys by key id, refetched as the module docstring says."""

    def __init__(
        self,
        discovery: Discovery,
        http: httpx.Client,
        *,
        refresh_floor: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._discovery = discovery
        self._http = http
        self._floor = refresh_floor
        self._clock = clock
        self._keys: dict[str | None, PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> PyJWK | None:
        """The key ``kid`` names (a token without a kid: the only key), or None."""
        with self._lock:
            now = self._clock()
            stale = self._fetched_at is None or now - self._fetched_at >= MAX_AGE
            may_refetch = self._fetched_at is None or now - self._fetched_at >= self._floor
            if stale or (self._find(kid) is None and may_refetch):
                self._refresh(now, needed=self._find(kid) is None)
            return self._find(kid)

    def _refresh(self, now: float, *, needed: bool) -> None:
        """Fetch the keys; a failed hourly refresh keeps the keys in hand (a provider's outage
        does not lock out tokens of keys already known) and is tried again after the floor."""
        try:
            self._keys = self._fetch()
        except IdentityProviderError as exc:
            if needed or not self._keys:
                raise
            log.warning("sign-on keys kept: their refresh failed error=%s", exc)
            self._fetched_at = now - MAX_AGE + self._floor
            return
        self._fetched_at = now

    def _find(self, kid: str | None) -> PyJWK | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid) if kid is not None else None

    def _fetch(self) -> dict[str | None, PyJWK]:
        uri = self._discovery.metadata().jwks_uri
        body = fetch_json(self._http, uri)
        try:
            keys = PyJWKSet.from_dict(body).keys
        except PyJWKSetError as exc:
            raise IdentityProviderError(f"{uri}: no usable signing key: {exc}") from exc
        signing = [key for key in keys if key.public_key_use in (None, "sig")]
        log.info(
            "sign-on keys fetched uri=%s kids=%s", uri, ",".join(str(k.key_id) for k in signing)
        )
        return {key.key_id: key for key in signing}
