"""The rate limits' parts (steward.security.rate_limits, rate_limit_storage, source_address)
on their own: which key a request counts under, when a key is refused, and the storage's bound.
Over HTTP with real JobManagers: tests/integration/jobmanager/test_rate_limits.py."""

from __future__ import annotations

import pytest

from steward.config import RateLimitSettings, load
from steward.errors import ConfigurationError
from steward.metrics.jobmanager_metrics import RATE_LIMIT_KINDS
from steward.security.identity import INTERNAL_IDENTITY, Identity
from steward.security.rate_limit_storage import BoundedMemoryStorage
from steward.security.rate_limits import (
    Kind,
    RateLimiter,
    credential_key,
    is_internal,
    submitter_keys,
)
from steward.security.source_address import (
    FORWARDED_FOR,
    FORWARDED_PROOF,
    address_key,
    forwarded_headers,
    source_address,
)
from steward.wire.tokens import Role
from support import Clock

SECRET = "internal-secret"


def limits(per_address: int = 3, per_credential: int = 3, per_team: int = 100) -> RateLimitSettings:
    return RateLimitSettings(
        auth_failures_per_address=per_address,
        auth_failures_per_credential=per_credential,
        auth_failure_window=60.0,
        submissions_per_team=per_team,
        submission_window=60.0,
    )


def scope(client: str, headers: dict[str, str] | None = None) -> dict[str, object]:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    return {"type": "http", "client": (client, 5000), "headers": raw}


def test_an_address_is_refused_after_its_failures_whatever_the_credential() -> None:
    limited: list[str] = []
    limiter = RateLimiter(limits(per_credential=0), on_limited=limited.append)
    for n in range(3):
        assert limiter.refused("10.0.0.1", f"guess-{n}") is None
        limiter.failed("10.0.0.1", f"guess-{n}")

    refusal = limiter.refused("10.0.0.1", "the-right-one")

    assert refusal is not None and refusal.kind is Kind.ADDRESS
    assert 1 <= refusal.retry_after <= 60
    assert refusal.headers() == {"Retry-After": str(refusal.retry_after)}
    assert refusal.body().code == "rate_limited"
    assert limiter.refused("10.0.0.2", "the-right-one") is None
    assert limited == ["auth-address"]


def test_a_credential_is_refused_after_its_failures_from_any_address() -> None:
    limiter = RateLimiter(limits(per_address=0))
    for n in range(3):
        limiter.failed(f"10.0.0.{n}", "revoked")

    refusal = limiter.refused("10.0.0.99", "revoked")

    assert refusal is not None and refusal.kind is Kind.CREDENTIAL
    assert limiter.refused("10.0.0.99", "another") is None


def test_failures_are_forgotten_once_their_window_has_passed() -> None:
    clock = Clock(1_000_000.0)
    limiter = RateLimiter(limits(), clock=clock)
    for _ in range(3):
        limiter.failed("10.0.0.1", "x")
    assert limiter.refused("10.0.0.1", "x") is not None

    clock.now += 2 * 60  # the sliding window's previous window no longer overlaps

    assert limiter.refused("10.0.0.1", "x") is None


def test_no_failure_in_the_window_means_no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(1_000_000.0)
    limiter = RateLimiter(limits(), clock=clock)
    storage = limiter.failure_storage

    def looked_up(*_args: object, **_kwargs: object) -> bool:
        raise AssertionError("a quiet limiter looked a counter up")

    assert storage.is_quiet()
    with monkeypatch.context() as patched:
        patched.setattr(storage, "get_sliding_window", looked_up)
        assert limiter.refused("10.0.0.1", "x") is None
    limiter.failed("10.0.0.1", "x")
    assert not storage.is_quiet()
    clock.now += 2 * 60  # every counter of the failure has expired
    assert storage.is_quiet()
    with monkeypatch.context() as patched:
        patched.setattr(storage, "get_sliding_window", looked_up)
        assert limiter.refused("10.0.0.1", "x") is None


def test_submissions_count_per_team_and_refuse_a_batch_whole() -> None:
    limiter = RateLimiter(limits(per_team=100))
    team_a = Identity(name="alice", role=Role.SUBMITTER, teams=frozenset({"a"}))
    also_a = Identity(name="bob", role=Role.SUBMITTER, teams=frozenset({"a"}))
    team_b = Identity(name="carol", role=Role.SUBMITTER, teams=frozenset({"b"}))
    assert limiter.submitting(team_a, 60) is None

    refusal = limiter.submitting(also_a, 41)

    assert refusal is not None and refusal.kind is Kind.SUBMISSIONS
    assert limiter.submitting(also_a, 40) is None  # the refused 41 were not counted
    assert limiter.submitting(team_b, 100) is None
    assert limiter.submitting(team_a) is not None


def test_a_caller_of_several_teams_spends_each_ones_share() -> None:
    limiter = RateLimiter(limits(per_team=100))
    both = Identity(name="dan", role=Role.SUBMITTER, teams=frozenset({"a", "b"}))
    only_b = Identity(name="erin", role=Role.SUBMITTER, teams=frozenset({"b"}))
    assert limiter.submitting(both, 100) is None
    assert limiter.submitting(only_b) is not None


def test_limits_of_zero_refuse_nothing() -> None:
    limiter = RateLimiter(limits(per_address=0, per_credential=0, per_team=0))
    caller = Identity(name="x", role=Role.SUBMITTER)
    for _ in range(50):
        limiter.failed("10.0.0.1", "x")
        assert limiter.submitting(caller, 100) is None
    assert limiter.refused("10.0.0.1", "x") is None


def test_a_caller_without_a_team_counts_under_its_token_else_its_name() -> None:
    assert submitter_keys(Identity(name="ci", role=Role.SUBMITTER, token_id="abc")) == (
        "caller:abc",
    )
    assert submitter_keys(Identity(name="robot", role=Role.SUBMITTER)) == ("caller:robot",)
    teams = Identity(name="x", role=Role.SUBMITTER, teams=frozenset({"b", "a"}))
    assert submitter_keys(teams) == ("team:a", "team:b")


def test_a_credential_counts_as_a_digest_never_as_itself() -> None:
    token = "stw_0123456789ab_secretsecretsecret"
    key = credential_key(token)
    assert "secret" not in key and "0123456789ab" not in key
    assert key == credential_key(token) != credential_key(token + "x")


def test_only_the_internal_credential_is_internal() -> None:
    assert is_internal(SECRET, SECRET)
    assert not is_internal(SECRET + "x", SECRET)
    assert not is_internal(SECRET, None)
    assert INTERNAL_IDENTITY.internal


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("testclient", "testclient"),
    ],
)
def test_an_address_counts_as_itself_and_an_ipv6_one_as_its_64(host: str, key: str) -> None:
    assert address_key(host) == key


def test_a_forwarded_address_counts_only_with_a_cluster_members_proof() -> None:
    vouched = forwarded_headers("192.0.2.7:5000 via 10.0.0.5:1", SECRET)
    assert source_address(scope("10.0.0.5", vouched), SECRET) == "192.0.2.7"
    forged = {FORWARDED_FOR: "192.0.2.8:1", FORWARDED_PROOF: vouched[FORWARDED_PROOF]}
    assert source_address(scope("10.0.0.5", forged), SECRET) == "10.0.0.5"
    assert source_address(scope("10.0.0.5", vouched), "another-secret") == "10.0.0.5"
    assert source_address(scope("10.0.0.5", {FORWARDED_FOR: "192.0.2.7:1"}), SECRET) == ("10.0.0.5")
    ipv6 = forwarded_headers("2001:db8::1:443", SECRET)
    assert source_address(scope("10.0.0.5", ipv6), SECRET) == "2001:db8::/64"


def test_the_storage_never_holds_more_than_its_bound() -> None:
    clock = Clock(1_000_000.0)
    storage = BoundedMemoryStorage(max_keys=1000, clock=clock)
    limiter = RateLimiter(limits(), clock=clock, max_keys=1000)
    for n in range(10_000):
        storage.incr(f"key-{n}", 60)
        limiter.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}", f"guess-{n}")
    assert len(storage) == 1000
    assert storage.dropped == 9000
    assert len(limiter.failure_storage) == 1000
    assert storage.get("key-9999") == 1 and storage.get("key-0") == 0


def test_expired_counters_are_removed_as_new_ones_come() -> None:
    clock = Clock(1_000_000.0)
    storage = BoundedMemoryStorage(max_keys=1000, clock=clock)
    for n in range(100):
        storage.incr(f"old-{n}", 60)
    clock.now += 61
    storage.incr("new", 60)
    assert len(storage) == 1
    assert storage.dropped == 0


def test_the_metric_kinds_are_the_limiters() -> None:
    assert tuple(kind.value for kind in Kind) == RATE_LIMIT_KINDS


def test_a_team_limit_below_one_batch_is_a_clear_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="at least 100"):
        load(environ={}, overrides={"security.rate-limits.submissions.per-team": 50})
    with pytest.raises(ConfigurationError, match="must not be negative"):
        load(environ={}, overrides={"security.rate-limits.auth-failures.per-address": -1})
    settings = load(environ={}, overrides={"security.rate-limits.submissions.per-team": 0})
    assert settings.settings.rate_limits.submissions_per_team == 0
