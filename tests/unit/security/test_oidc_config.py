"""The ``security.oidc.*`` keys: each bad value is a clear ConfigurationError naming its key,
and a combination that cannot work stops a JobManager at start (steward.security.sign_on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.config import OidcSettings, load
from steward.errors import ConfigurationError
from steward.security.sign_on import sign_on

ISSUER = "https://idp.example.com/realms/data"
GOOD = {
    "security.oidc.issuer": ISSUER,
    "security.oidc.client-id": "steward",
    "security.oidc.group-roles": "steward-admins=admin, data-eng=submitter",
}


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("security.oidc.issuer", "http://idp.example.com", "https://"),
        ("security.oidc.issuer", "idp.example.com", "https://"),
        ("security.oidc.algorithms", "RS256,HS256", "HS256: only public-key algorithms"),
        ("security.oidc.algorithms", "none", "none: only public-key"),
        ("security.oidc.algorithms", " , ", "at least one algorithm"),
        ("security.oidc.group-roles", "data-eng=superuser", "role must be one of"),
        ("security.oidc.group-roles", "data-eng", "is not group=value"),
        ("security.oidc.group-teams", "data-eng=etl team", "a team is 1-64"),
        ("security.oidc.leeway", "1h", "between 0 and 5m"),
        ("security.oidc.user-claim", "", "must name a claim"),
        ("security.oidc.redirect-uri", "http://steward.example.com/cb", "https://"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(key: str, value: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as refused:
        load(overrides={**GOOD, key: value}, environ={})
    assert key in str(refused.value)


def test_http_is_allowed_on_loopback_only_and_defaults_are_safe() -> None:
    oidc = load(
        overrides={**GOOD, "security.oidc.issuer": "http://127.0.0.1:8080"}, environ={}
    ).settings.oidc
    assert oidc.enabled and oidc.user_claim == "sub" and oidc.groups_claim == "groups"
    assert "HS256" not in oidc.algorithms and "none" not in oidc.algorithms
    assert not load(environ={}).settings.oidc.enabled


def _settings(**changes: str) -> OidcSettings:
    return load(overrides={**GOOD, **changes}, environ={}).settings.oidc


def test_an_issuer_without_a_client_id_or_any_role_mapping_stops_the_start() -> None:
    with pytest.raises(ConfigurationError, match=r"security\.oidc\.client-id is not set"):
        sign_on(_settings(**{"security.oidc.client-id": ""}))
    with pytest.raises(ConfigurationError, match=r"security\.oidc\.group-roles is empty"):
        sign_on(_settings(**{"security.oidc.group-roles": ""}))


def test_the_client_secret_file_must_be_readable(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(ConfigurationError, match=r"security\.oidc\.client-secret-file"):
        sign_on(_settings(**{"security.oidc.client-secret-file": missing}))


def test_a_good_configuration_needs_no_provider_to_start(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    secret.chmod(0o600)
    provider = sign_on(_settings(**{"security.oidc.client-secret-file": str(secret)}))
    assert provider is not None
    try:
        assert provider.name == "idp.example.com"  # from the issuer: no display-name set
        assert provider.verifier.rules.audience == "steward"  # the client id by default
    finally:
        provider.close()
