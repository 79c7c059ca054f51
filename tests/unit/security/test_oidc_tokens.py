"""Sign-on tokens checked (steward.security.oidc, .oidc_keys): signature, algorithm allowlist,
issuer, audience, expiry, and the provider's keys refetched on an unknown key id no more often
than the floor. The provider's HTTP is an httpx MockTransport here (what is tested is the
checking and the fetch policy, not HTTP); the real provider is tests/e2e/oidc."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from steward.errors import IdentityProviderError
from steward.security.authenticator import Authenticator
from steward.security.identity import Identity
from steward.security.oidc import TokenRules, TokenVerifier
from steward.security.oidc_claims import ClaimMapping
from steward.security.oidc_keys import Discovery, SigningKeys
from steward.wire.tokens import Role
from support import Clock

ISSUER = "https://idp.test"
AUDIENCE = "steward-api"
MAPPING = ClaimMapping("sub", "groups", (("data-eng", "submitter"),), (("data-eng", "etl"),))


class Provider:
    """The provider's two documents, and how often its keys were fetched."""

    def __init__(self) -> None:
        self.keys = {"k1": rsa.generate_private_key(public_exponent=65537, key_size=2048)}
        self.published = ["k1"]
        self.jwks_fetches = 0
        self.up = True

    def handle(self, request: httpx.Request) -> httpx.Response:
        if not self.up:
            return httpx.Response(502)
        if request.url.path == "/.well-known/openid-configuration":
            return httpx.Response(200, json=self._discovery())
        self.jwks_fetches += 1
        jwks = [self._public_jwk(kid) for kid in self.published]
        return httpx.Response(200, json={"keys": jwks})

    def _discovery(self) -> dict[str, str]:
        return {
            "issuer": ISSUER,
            "jwks_uri": ISSUER + "/jwks",
            "authorization_endpoint": ISSUER + "/auth",
            "token_endpoint": ISSUER + "/token",
        }

    def _public_jwk(self, kid: str) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
        return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}

    def token(self, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "groups": ["data-eng"]}
        body |= {"iat": now, "exp": now + 300} | claims
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def provider() -> Provider:
    return Provider()


def _verifier(provider: Provider, clock: Clock | None = None) -> TokenVerifier:
    http = httpx.Client(transport=httpx.MockTransport(provider.handle))
    keys = SigningKeys(Discovery(ISSUER, http), http, refresh_floor=30.0, clock=clock or Clock())
    return TokenVerifier(TokenRules(ISSUER, AUDIENCE, ("RS256",), 5.0), keys, MAPPING)


def test_a_valid_token_names_its_caller_with_role_and_teams(provider: Provider) -> None:
    identity = _verifier(provider).identity(provider.token())
    assert identity == Identity(name="alice", role=Role.SUBMITTER, teams=frozenset({"etl"}))


# Times are taken when the test runs, not when it is collected: a run can reach this test
# many minutes after collection, by when a "not before" of collection time + 600 s has passed.
@pytest.mark.parametrize(
    "claims_at",
    [
        lambda now: {"exp": now - 60},  # expired beyond the leeway
        lambda now: {"iss": "https://elsewhere.test"},
        lambda now: {"aud": "another-api"},
        lambda now: {"nbf": now + 600},
    ],
    ids=["expired", "issuer", "audience", "not-yet-valid"],
)
def test_wrong_claims_are_refused(
    provider: Provider, claims_at: Callable[[int], dict[str, Any]]
) -> None:
    claims = claims_at(int(time.time()))
    assert _verifier(provider).identity(provider.token(**claims)) is None


def test_a_token_without_exp_is_refused(provider: Provider) -> None:
    key = provider.keys["k1"]
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "groups": ["data-eng"]}
    token = jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})
    assert _verifier(provider).identity(token) is None


def test_an_algorithm_off_the_allowlist_is_refused_before_any_key_is_read(
    provider: Provider,
) -> None:
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 60}
    verifier = _verifier(provider)
    assert verifier.identity(jwt.encode(body, None, algorithm="none")) is None
    assert verifier.identity(jwt.encode(body, "k" * 32, algorithm="HS256")) is None
    assert provider.jwks_fetches == 0


def test_an_unknown_key_id_refetches_at_most_once_per_floor(provider: Provider) -> None:
    clock = Clock()
    verifier = _verifier(provider, clock)
    assert verifier.identity(provider.token()) is not None
    assert provider.jwks_fetches == 1
    # The provider rotates: k2 signs, k1 stays published
    provider.keys["k2"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    provider.published = ["k2", "k1"]
    rotated = provider.token(kid="k2")
    clock.now += 10  # within the floor: no fetch, refused for now
    assert verifier.identity(rotated) is None
    assert provider.jwks_fetches == 1
    clock.now += 25  # past it: one fetch, and the new key is taken
    assert verifier.identity(rotated) is not None
    assert provider.jwks_fetches == 2
    # A stream of forged key ids costs one fetch per floor, not one per token: 40 of them
    # over 40 s, the last fetch 0 s before the first, make one more fetch (at 30 s)
    for n in range(40):
        clock.now += 1
        bogus = jwt.encode({"sub": "x"}, provider.keys["k1"], "RS256", headers={"kid": f"f{n}"})
        assert verifier.identity(bogus) is None
    assert provider.jwks_fetches == 3


def test_a_provider_down_is_unavailability_not_a_verdict(provider: Provider) -> None:
    provider.up = False
    with pytest.raises(IdentityProviderError):
        _verifier(provider).identity(provider.token())


def test_the_authenticator_sends_jwts_to_sign_on_and_stw_tokens_to_zookeeper(
    provider: Provider,
) -> None:
    looked_up: list[str] = []
    verifier = _verifier(provider)

    def lookup(token_id: str) -> None:
        looked_up.append(token_id)

    with_sign_on = Authenticator(lookup, "internal-secret", sign_on=verifier.identity)
    identity = with_sign_on.verify(provider.token())
    assert identity is not None and identity.name == "alice"
    assert with_sign_on.verify("stw_0123456789ab_secret") is None
    assert looked_up == ["0123456789ab"]
    without = Authenticator(lookup, "internal-secret")
    assert without.verify(provider.token()) is None  # sign-on off: a JWT is no credential


def test_a_failed_hourly_refresh_keeps_the_keys_already_known(provider: Provider) -> None:
    clock = Clock()
    verifier = _verifier(provider, clock)
    assert verifier.identity(provider.token()) is not None
    provider.up = False
    clock.now += 3600  # the keys are due for their hourly refresh, and it fails
    assert verifier.identity(provider.token()) is not None
    provider.keys["k2"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(IdentityProviderError):  # a key it does not know: it cannot tell
        verifier.identity(provider.token(kid="k2"))
