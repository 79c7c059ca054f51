"""Rate limits of a JobManager's REST API and web UI: how often one source address or one
credential may fail to authenticate, and how many jobs one team may submit.

Each JobManager counts on its own, in memory (``security.rate-limits.*``; docs/security.md,
"Rate limits"): nothing is shared through ZooKeeper, so a limit holds per JobManager and a
restart forgets it. The leader sees every submission (a standby forwards them), so the team
limit is the leader's; a standby's forward is counted under the client's address, not the
standby's (:mod:`.source_address`).

- **Failures.** A request whose token (or UI cookie) is refused, and a token the UI's login
  form refuses, counts once for its source address and once for the credential presented (a
  digest of it: the key is never the token itself). An address or credential that spent its
  failures is answered 429 with ``Retry-After`` *before* its token is looked at, a valid one
  included, so a guessing loop never learns which of its guesses was right. The cluster's
  internal credential (TaskManagers' heartbeats) is never counted nor refused, nor are the
  probes, which the middleware never limits.
- **Submissions.** Each job submitted counts for each team of the caller (the body names the
  job's team, which this layer does not read, so a caller of several teams spends each one's
  share), or for the caller itself when it has none.

The counters are :mod:`limits`' sliding-window counters over :class:`BoundedMemoryStorage`,
whose size is bounded whatever the flood of distinct keys.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.types import Scope

from steward.config import RateLimitSettings
from steward.wire.rest import ErrorBody

from .identity import Identity
from .source_address import source_address

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.strategies import SlidingWindowCounterRateLimiter

MAX_KEYS = 50_000
"""Counters each of the two storages holds at most (about 350 bytes each with their keys:
benchmarks/rate_limit_flood.py)."""


class Kind(enum.StrEnum):
    """What a refusal was for: the ``kind`` label of ``steward_rate_limited_total``."""

    ADDRESS = "auth-address"
    CREDENTIAL = "auth-credential"
    SUBMISSIONS = "submissions"


@dataclass(frozen=True)
class Refusal:
    """A request refused by a limit: answered 429 with ``Retry-After``."""

    kind: Kind
    retry_after: int
    """Whole seconds, at least 1."""

    @property
    def message(self) -> str:
        what = {
            Kind.ADDRESS: "too many failed authentications from this address",
            Kind.CREDENTIAL: "too many failed authentications with this credential",
            Kind.SUBMISSIONS: "too many submissions by this team",
        }[self.kind]
        return f"{what}; retry in {self.retry_after} s"

    def body(self) -> ErrorBody:
        return ErrorBody(code="rate_limited", message=self.message)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class RateLimiter:
    """The limits of one JobManager. ``on_limited`` is told the :class:`Kind` of every
    refusal (the metric); ``clock`` dates the counters (tests move it)."""

    def __init__(
        self,
        settings: RateLimitSettings,
        *,
        on_limited: Callable[[str], None] = lambda _kind: None,
        max_keys: int = MAX_KEYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # Imported here: a TaskManager imports this module (its HTTP port's middleware) and
        # never limits, and limits costs ~0.05 s of CPU a start.
        from limits.strategies import SlidingWindowCounterRateLimiter

        from .rate_limit_storage import BoundedMemoryStorage

        self._on_limited = on_limited
        self.failure_storage = BoundedMemoryStorage(max_keys, clock)
        self.submission_storage = BoundedMemoryStorage(max_keys, clock)
        self._failures = SlidingWindowCounterRateLimiter(self.failure_storage)
        self._submissions = SlidingWindowCounterRateLimiter(self.submission_storage)
        window = settings.auth_failure_window
        self._per_address = _item(settings.auth_failures_per_address, window)
        self._per_credential = _item(settings.auth_failures_per_credential, window)
        self._per_team = _item(settings.submissions_per_team, settings.submission_window)

    def refused(self, address: str | None, credential: str) -> Refusal | None:
        """Whether a request from ``address`` with ``credential`` is refused before its
        credential is verified: either has spent its failures. While no failure is counted
        within the window (a cluster's usual state) none can have been spent, and nothing is
        looked up: the lookups were about a twentieth of the leader's CPU a submission."""
        if self.failure_storage.is_quiet():
            return None
        for kind, item, key in self._failure_keys(address, credential):
            if not self._failures.test(item, key):
                return self._refusal(kind, self._failures, item, key)
        return None

    def failed(self, address: str | None, credential: str) -> None:
        """Count one failed authentication against ``address`` and ``credential``."""
        for _, item, key in self._failure_keys(address, credential):
            self._failures.hit(item, key)

    def submitting(self, caller: Identity, jobs: int = 1) -> Refusal | None:
        """Count ``jobs`` submissions by ``caller``'s teams, or refuse them all (nothing
        counted) when any team has no room for them."""
        if self._per_team is None or jobs <= 0:
            return None
        keys = submitter_keys(caller)
        for key in keys:
            if not self._submissions.test(self._per_team, key, cost=jobs):
                return self._refusal(Kind.SUBMISSIONS, self._submissions, self._per_team, key)
        for key in keys:
            self._submissions.hit(self._per_team, key, cost=jobs)
        return None

    def _failure_keys(
        self, address: str | None, credential: str
    ) -> Iterable[tuple[Kind, RateLimitItem, str]]:
        if self._per_address is not None and address is not None:
            yield Kind.ADDRESS, self._per_address, address
        if self._per_credential is not None:
            yield Kind.CREDENTIAL, self._per_credential, credential_key(credential)

    def _refusal(
        self,
        kind: Kind,
        limiter: SlidingWindowCounterRateLimiter,
        item: RateLimitItem,
        key: str,
    ) -> Refusal:
        self._on_limited(kind.value)
        # The strategy dates its reset by the wall clock, whatever the storage's clock.
        reset = limiter.get_window_stats(item, key).reset_time
        return Refusal(kind, max(1, math.ceil(reset - time.time())))


@dataclass(frozen=True)
class Attempt:
    """One request's credential, as the failure limits count it."""

    limiter: RateLimiter
    address: str | None
    credential: str

    def refused(self) -> Refusal | None:
        return self.limiter.refused(self.address, self.credential)

    def failed(self) -> None:
        self.limiter.failed(self.address, self.credential)


def attempt_of(
    limiter: RateLimiter | None, scope: Scope, token: str | None, internal_secret: str | None
) -> Attempt | None:
    """The request's credential as the failure limits count it: any but the internal one,
    under the request's source address (:func:`.source_address.source_address`)."""
    if limiter is None or token is None or is_internal(token, internal_secret):
        return None
    return Attempt(limiter, source_address(scope, internal_secret), token)


def is_internal(token: str, internal_secret: str | None) -> bool:
    """Whether ``token`` is the cluster's internal credential, which no limit applies to."""
    return internal_secret is not None and hmac.compare_digest(
        token.encode("utf-8", "surrogateescape"), internal_secret.encode()
    )


def credential_key(credential: str) -> str:
    """What a credential counts as: a digest, so the counters never hold a token."""
    digest = hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()
    return f"credential:{digest[:32]}"


def submitter_keys(caller: Identity) -> tuple[str, ...]:
    """Whose share a submission spends: each team of the caller, or the caller's own (its
    token's id, else its name) when it belongs to none."""
    if caller.teams:
        return tuple(f"team:{team}" for team in sorted(caller.teams))
    return (f"caller:{caller.token_id or caller.name}",)


def _item(amount: int, window: float) -> RateLimitItem | None:
    """The limit ``amount`` per ``window`` seconds; None when 0 turns it off."""
    if amount <= 0:
        return None
    from limits import RateLimitItemPerSecond  # as in RateLimiter.__init__, which calls this

    return RateLimitItemPerSecond(amount, max(1, round(window)))
