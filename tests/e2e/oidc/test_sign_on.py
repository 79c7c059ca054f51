"""Sign-on with a real OpenID provider (oidc-provider, run by Node): the browser's sign-in
through the provider's own pages, the API with the provider's access tokens (role and teams
from groups), expired and forged tokens refused, a rotated key taken without a restart."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from e2e.oidc.conftest import DISPLAY_NAME, SignOnCluster
from e2e.oidc.oidc_provider import new_key
from e2e.ui.browser import expect, new_page
from steward.client import Client
from steward.errors import ApiError
from support import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser

PIPELINE = "def main(ctx):\n    return 1\n"


def _get(address: str, path: str, token: str) -> httpx.Response:
    return httpx.get(address + path, headers={"authorization": f"Bearer {token}"}, timeout=10)


def _claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def _signed_by_provider(sign_on: SignOnCluster, claims: dict[str, Any]) -> str:
    """``claims`` signed with the provider's own current key (what it never would sign)."""
    jwk = sign_on.provider.keys[0]
    key = jwt.PyJWK.from_dict(jwk).key
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": jwk["kid"], "typ": "at+jwt"})


def test_browser_signs_in_with_the_provider_and_lands_on_the_jobs_page(
    sign_on: SignOnCluster, browser: Browser
) -> None:
    address = sign_on.standby.address
    page = new_page(browser)
    page.goto(address + "/ui/jobs")  # not signed in: sent to the login page
    page.click(f"text=Sign in with {DISPLAY_NAME}")
    page.fill("input[name=login]", "alice")  # oidc-provider's own login page
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.click("button[type=submit]")  # its consent page: Continue
    page.wait_for_url(address + "/ui/")
    page.goto(address + "/ui/jobs")
    expect(page.locator("#job-list")).to_be_visible()
    session = next(c for c in page.context.cookies() if c["name"] == "steward_token")
    assert _claims(session["value"])["preferred_username"] == "alice"
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert page.request.get(address + "/v1/jobs").status == 200
    wait_until(
        lambda: _audited_sign_in(sign_on.standby.log_text(), "alice", "submitter"),
        10,
        "the JobManager audits alice's sign-in",
    )


def _audited_sign_in(log_text: str, who: str, role: str) -> bool:
    for line in log_text.splitlines():
        if '"audit": "sign-in"' in line:
            entry = json.loads(line[line.index("{") :])
            if (entry["who"], entry["role"], entry["outcome"]) == (who, role, "ok"):
                return True
    return False


def test_login_page_offers_the_provider_beside_tokens(sign_on: SignOnCluster) -> None:
    page = httpx.get(sign_on.leader.address + "/ui/login", timeout=10)
    assert f"Sign in with {DISPLAY_NAME}" in page.text
    assert 'name="token"' in page.text


def test_api_takes_a_real_access_token_with_the_role_its_groups_give(
    sign_on: SignOnCluster, tmp_path: Path
) -> None:
    alice = sign_on.provider.access_token("alice")  # data-eng: submitter
    carol = sign_on.provider.access_token("carol")  # analysts: viewer
    leader = sign_on.leader.address
    assert _get(leader, "/v1/jobs", alice).status_code == 200
    assert _get(leader, "/v1/jobs", carol).status_code == 200
    assert _get(leader, "/v1/tokens", alice).status_code == 403  # admin only
    pipeline = tmp_path / "one.py"
    pipeline.write_text(PIPELINE)
    with Client([sign_on.standby.address], token=carol) as client, pytest.raises(ApiError) as no:
        client.submit(pipeline, job_id="oidc-carol-1")
    assert no.value.status == 403
    # A write through the standby: forwarded with alice's own token, verified again by the
    # leader, which records alice (not the standby) as the submitter, in one of the teams her
    # groups map to (she is in two, so she names one).
    with Client([sign_on.standby.address], token=alice) as client:
        job = client.submit(pipeline, job_id="oidc-alice-1", team="ml")
    assert job.submitter == "alice" and job.team == "ml"


def test_a_token_whose_groups_map_to_no_role_is_refused_403(sign_on: SignOnCluster) -> None:
    bob = sign_on.provider.access_token("bob")
    answer = _get(sign_on.leader.address, "/v1/jobs", bob)
    assert answer.status_code == 403
    assert "none of its groups maps to a Steward role" in answer.json()["message"]


def test_an_expired_token_is_refused_401(sign_on: SignOnCluster) -> None:
    real = _claims(sign_on.provider.access_token("alice"))
    now = int(time.time())
    expired = _signed_by_provider(sign_on, {**real, "iat": now - 7200, "exp": now - 3600})
    control = _signed_by_provider(sign_on, {**real, "iat": now, "exp": now + 600})
    leader = sign_on.leader.address
    assert _get(leader, "/v1/jobs", control).status_code == 200
    answer = _get(leader, "/v1/jobs", expired)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"


def test_a_token_signed_with_another_key_is_refused_401(sign_on: SignOnCluster) -> None:
    real = _claims(sign_on.provider.access_token("alice"))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = sign_on.provider.keys[0]["kid"]  # the provider's key id: only the signature differs
    forged = jwt.encode(real, stranger, algorithm="RS256", headers={"kid": kid})
    assert _get(sign_on.leader.address, "/v1/jobs", forged).status_code == 401


def test_unsigned_and_hmac_tokens_are_refused_401(sign_on: SignOnCluster) -> None:
    real = _claims(sign_on.provider.access_token("alice"))
    kid = sign_on.provider.keys[0]["kid"]
    unsigned = jwt.encode(real, None, algorithm="none", headers={"kid": kid})
    public_pem = (
        jwt.PyJWK.from_dict(sign_on.provider.keys[0])
        .key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    # The classic confusion: HS256 keyed with the provider's public key, which anyone has.
    hmac_signed = _hs256(real, public_pem, kid)
    for forged in (unsigned, hmac_signed):
        assert _get(sign_on.leader.address, "/v1/jobs", forged).status_code == 401


def _hs256(claims: dict[str, Any], secret: bytes, kid: str) -> str:
    """PyJWT refuses to sign HS256 with a PEM key (the very attack): signed by hand."""

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{part(claims)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_a_rotated_key_is_accepted_without_a_restart(sign_on: SignOnCluster) -> None:
    leader = sign_on.leader.address
    before = sign_on.provider.access_token("alice")
    assert _get(leader, "/v1/jobs", before).status_code == 200  # key-1 is cached now
    old = sign_on.provider.keys
    sign_on.provider.restart([new_key("key-2"), *old])
    after = sign_on.provider.access_token("alice")
    assert jwt.get_unverified_header(after)["kid"] == "key-2"
    wait_until(
        lambda: _get(leader, "/v1/jobs", after).status_code == 200,
        10,
        "the JobManager takes a token signed with the provider's new key",
    )
    assert _get(leader, "/v1/jobs", before).status_code == 200  # key-1 is still published


def test_a_callback_this_browser_did_not_start_is_refused(sign_on: SignOnCluster) -> None:
    callback = sign_on.leader.address + "/ui/login/callback"
    # No attempt cookie (a login CSRF: an attacker's code sent to a victim's browser)
    stranger = httpx.get(callback, params={"code": "c", "state": "s" * 43}, timeout=10)
    assert stranger.status_code == 400
    assert "was not started in this browser" in stranger.text
    assert "steward_token" not in stranger.headers.get("set-cookie", "")
    # An attempt cookie whose state is not the one sent back
    cookie = {"steward_sign_on": ".".join(["a" * 43, "b" * 43, "c" * 43])}
    wrong = httpx.get(callback, params={"code": "c", "state": "d" * 43}, cookies=cookie)
    assert wrong.status_code == 400
