"""A real OpenID provider as a process: ``provider/provider.mjs`` (oidc-provider) under Node.

The tests own its signing keys (:func:`new_key`), so a rotation is a restart with another key
first (:meth:`OidcProvider.restart`), and a test can sign what the provider never would (an
expired token) with the provider's very key. :meth:`OidcProvider.access_token` signs a user in
the way a browser would, through oidc-provider's own login and consent pages (its
devInteractions), with PKCE, and redeems the code: a real access token, no shortcut.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from e2e.oidc.provider_env import SCRIPT, installed_modules, node
from support import wait_until

CLIENT_ID = "steward-ui"
CLIENT_SECRET = "s3cret-" + "x" * 24
CLI_REDIRECT = "http://127.0.0.1:1/cli-callback"
"""A redirect URI no server answers: :meth:`access_token` reads the code from the redirect."""
SCOPE = "steward"


def new_key(kid: str) -> dict[str, Any]:
    """A fresh RSA signing key as a private JWK."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(private))
    jwk.pop("key_ops", None)  # PyJWT's ["sign"] would hide it from oidc-provider's key selection
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


class OidcProvider:
    """oidc-provider on ``port`` with ``users`` (name -> groups) and one client whose redirect
    URIs are ``redirect_uris`` (and :data:`CLI_REDIRECT`)."""

    def __init__(
        self,
        workdir: Path,
        port: int,
        *,
        audience: str,
        users: Mapping[str, list[str]],
        redirect_uris: list[str],
        keys: list[dict[str, Any]],
    ) -> None:
        self.workdir = workdir
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        self.audience = audience
        self.users = dict(users)
        self.redirect_uris = [*redirect_uris, CLI_REDIRECT]
        self.keys = keys
        self._process: subprocess.Popen[bytes] | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "node_modules").symlink_to(installed_modules(), target_is_directory=True)
        (workdir / "provider.mjs").write_bytes(SCRIPT.read_bytes())

    def start(self) -> None:
        config = self.workdir / "provider.json"
        config.write_text(json.dumps(self._config()))
        config.chmod(0o600)
        log = (self.workdir / "provider.log").open("ab")
        self._process = subprocess.Popen(
            [node() or "node", str(self.workdir / "provider.mjs"), str(config)],
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(self._answers, 30, "oidc-provider answers its discovery document")

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        self._process = None

    def restart(self, keys: list[dict[str, Any]]) -> None:
        """Stop, and start again signing with ``keys[0]`` (the others stay in its JWKS)."""
        self.stop()
        self.keys = keys
        self.start()

    def log_text(self) -> str:
        return (self.workdir / "provider.log").read_text(errors="replace")

    def _answers(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(f"oidc-provider exited:\n{self.log_text()[-3000:]}")
        try:
            url = self.issuer + "/.well-known/openid-configuration"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def _config(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "port": self.port,
            "audience": self.audience,
            "scope": SCOPE,
            "accessTokenTTL": 600,
            "jwks": {"keys": self.keys},
            "users": self.users,
            "clients": [
                {
                    "client_id": CLIENT_ID,
                    "client_secret": CLIENT_SECRET,
                    "redirect_uris": self.redirect_uris,
                    "grant_types": ["authorization_code"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "client_secret_basic",
                }
            ],
        }

    def access_token(self, user: str) -> str:
        """Sign ``user`` in through the provider's own pages and redeem the code."""
        verifier = secrets.token_urlsafe(32)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        params = {
            "client_id": CLIENT_ID,
            "response_type": "code",
            "redirect_uri": CLI_REDIRECT,
            "scope": f"openid profile {SCOPE}",
            "state": secrets.token_urlsafe(16),
            "nonce": secrets.token_urlsafe(16),
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
        }
        with httpx.Client(base_url=self.issuer, timeout=10) as http:
            code = _code(http, http.get("/auth", params=params), user)
            answer = http.post(
                "/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": CLI_REDIRECT,
                    "code_verifier": verifier,
                },
                auth=(CLIENT_ID, CLIENT_SECRET),
            )
        answer.raise_for_status()
        token: str = answer.json()["access_token"]
        return token


def _code(http: httpx.Client, answer: httpx.Response, user: str) -> str:
    """Follow the provider's redirects, filling its login and consent forms, to the code."""
    for _ in range(12):
        if answer.is_redirect:
            location = answer.headers["location"]
            if location.startswith(CLI_REDIRECT):
                query = parse_qs(urlsplit(location).query)
                if "code" not in query:
                    raise AssertionError(f"the provider refused: {location}")
                return query["code"][0]
            answer = http.get(urljoin(str(answer.url), location))
            continue
        answer.raise_for_status()
        action = re.search(r'action="([^"]+)"', answer.text)
        prompt = re.search(r'name="prompt" value="(\w+)"', answer.text)
        if action is None or prompt is None:
            raise AssertionError(f"no form on the provider's page:\n{answer.text[:2000]}")
        form = {"prompt": prompt.group(1), "login": user, "password": "any"}
        answer = http.post(urljoin(str(answer.url), action.group(1)), data=form)
    raise AssertionError("the provider's sign-in did not end with a code")
