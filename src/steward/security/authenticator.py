"""A bearer token into an :class:`Identity`: users' tokens against their records in ZooKeeper,
the TaskManagers' internal credential against the cluster's secret.

Every JobManager verifies against ZooKeeper, so a token works on any JobManager and a revoke
holds everywhere. Records are cached for :data:`CACHE_TTL` seconds (absent ones too, so a
stranger's guesses cost one ZooKeeper read per id and TTL): a revoked or expired token is
refused on every JobManager within that time (expiry is checked on every request), and at once
on the JobManager that revoked it (:meth:`Authenticator.forget`). A lookup whose read
overlapped a ``forget`` (its answer may be the record from before the revoke) is neither
cached nor believed: it reads again. A generation counter, moved by every ``forget``, tells.

With sign-on configured (``security.oidc.*``), a token shaped like a JWT goes to the provider's
verifier instead (:mod:`.oidc`): no ZooKeeper read, the provider's keys decide.
"""

from __future__ import annotations

import enum
import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from steward.errors import CoordinationError
from steward.wire.tokens import TokenRecord

from . import tokens
from .identity import ANONYMOUS_ADMIN, INTERNAL_IDENTITY, Identity

CACHE_TTL = 2.0
"""Seconds a token's record (or its absence) is trusted before it is read again."""
_CACHE_SIZE = 4096
_READS = 3

Lookup = Callable[[str], TokenRecord | None]
"""A token id's record, or None; raises :class:`~steward.errors.CoordinationError`."""
SignOnVerifier = Callable[[str], Identity | None]
"""A sign-on JWT's caller, or None (:meth:`steward.security.oidc.TokenVerifier.identity`)."""
MAX_JWT_LENGTH = 16 * 1024


def looks_like_jwt(token: str) -> bool:
    """Shaped like a compact JWS (three dot-separated parts): worth verifying as one.

    Here, not in :mod:`.oidc`: every process authenticates, few sign on, and :mod:`.oidc`
    imports PyJWT and httpx (start-up cost)."""
    return len(token) <= MAX_JWT_LENGTH and token.count(".") == 2 and token[:2] == "ey"


class Verdict(enum.Enum):
    LOOKUP = "lookup"


LOOKUP = Verdict.LOOKUP
"""What :meth:`Authenticator.cached` says when only reading the token's record can tell."""


@dataclass(frozen=True)
class _Cached:
    record: TokenRecord | None
    read_at: float


class Authenticator:
    """Verifies bearer tokens. ``enabled=False`` (a trusted network only) lets everyone in."""

    def __init__(
        self,
        lookup: Lookup,
        internal_secret: str | None,
        *,
        enabled: bool = True,
        cache_ttl: float = CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        sign_on: SignOnVerifier | None = None,
    ) -> None:
        self.enabled = enabled
        self._sign_on = sign_on
        self._lookup = lookup
        self._internal = internal_secret
        self._ttl = cache_ttl
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()
        self._generation = 0
        """Moved by every :meth:`forget`: a lookup that saw it move read too early."""

    @property
    def internal_credential(self) -> str | None:
        """The cluster's internal credential: what a standby vouches for a caller with."""
        return self._internal

    def anonymous(self, *, internal_route: bool) -> Identity | None:
        """Who a request without credentials is: nobody, unless auth is off."""
        if self.enabled:
            return None
        return INTERNAL_IDENTITY if internal_route else ANONYMOUS_ADMIN

    def cached(self, token: str) -> Identity | Literal[Verdict.LOOKUP] | None:
        """The identity when it is known without reading ZooKeeper; None when the token is
        refused; :data:`LOOKUP` when only :meth:`verify` can tell (it reads the record)."""
        if not self.enabled:
            return ANONYMOUS_ADMIN
        if self._internal is not None and hmac.compare_digest(
            token.encode("utf-8", "surrogateescape"), self._internal.encode()
        ):
            return INTERNAL_IDENTITY
        if self._is_sign_on(token):
            return LOOKUP  # the provider's keys may need fetching: off the event loop
        parsed = tokens.parse(token)
        if parsed is None:
            return None
        with self._lock:
            entry = self._cache.get(parsed.id)
        if entry is None or self._clock() - entry.read_at >= self._ttl:
            return LOOKUP
        return _identity(entry.record, parsed)

    def verify(self, token: str) -> Identity | None:
        """The caller ``token`` names, or None (unknown, revoked, expired, malformed)."""
        quick = self.cached(token)
        if quick is not LOOKUP:
            return quick
        if self._sign_on is not None and self._is_sign_on(token):
            return self._sign_on(token)
        parsed = tokens.parse(token)
        assert parsed is not None  # cached() said it is shaped like a token
        return _identity(self._read(parsed.id), parsed)

    def _is_sign_on(self, token: str) -> bool:
        return self._sign_on is not None and looks_like_jwt(token)

    def _read(self, token_id: str) -> TokenRecord | None:
        """The token's record, read and cached; read again if a revoke ran meanwhile (and
        refused as unverifiable, 503, should revokes keep overlapping every read)."""
        for _ in range(_READS):
            with self._lock:
                generation = self._generation
            record = self._lookup(token_id)
            with self._lock:
                if generation != self._generation:
                    # A forget() ran during the read: its record may predate the revoke.
                    continue
                if len(self._cache) >= _CACHE_SIZE:
                    self._cache.clear()
                self._cache[token_id] = _Cached(record, self._clock())
                return record
        raise CoordinationError(f"token {token_id}: every read overlapped a revoke; retry")

    def forget(self, token_id: str) -> None:
        """Drop a token's cached record (this JobManager just revoked it, and the record is
        gone from ZooKeeper), and make every lookup still in its read read again."""
        with self._lock:
            self._cache.pop(token_id, None)
            self._generation += 1


def _identity(record: TokenRecord | None, parsed: tokens.ParsedToken) -> Identity | None:
    if record is None or not tokens.matches(record, parsed):
        return None
    return Identity(
        name=record.name, role=record.role, token_id=record.id, teams=frozenset(record.teams)
    )
