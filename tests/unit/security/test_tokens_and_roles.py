"""steward.security on its own: tokens, roles, the authenticator's cache, credential files and
how a client finds its token."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest

from steward.client import Client
from steward.errors import ConfigurationError
from steward.security import audit, tokens
from steward.security.authenticator import Authenticator
from steward.security.credentials import find_token, read_secret, write_secret
from steward.security.identity import Identity
from steward.security.provision import ensure_files
from steward.security.roles import INTERNAL, Action, allows
from steward.wire.tokens import Role, TokenRecord


def test_a_token_is_stored_as_the_hash_of_its_secret_and_checked_against_it() -> None:
    token, record = tokens.mint("alice", Role.SUBMITTER)
    parsed = tokens.parse(token)
    assert parsed is not None and parsed.id == record.id
    assert parsed.secret not in record.to_json().decode()
    assert tokens.matches(record, parsed)
    assert not tokens.matches(record, tokens.ParsedToken(record.id, parsed.secret + "x"))
    other, _ = tokens.mint("bob", Role.SUBMITTER)
    assert tokens.parse(other) != parsed
    for garbage in ("", "stw_", "stw_xyz_abc", "Bearer x", "stw_0123456789ab", "x" * 1000):
        assert tokens.parse(garbage) is None


def test_an_expired_token_does_not_match() -> None:
    token, record = tokens.mint("ci", Role.VIEWER, expires_in=60)
    parsed = tokens.parse(token)
    assert parsed is not None and record.expires_at is not None
    assert tokens.matches(record, parsed, now=record.expires_at - 1)
    assert not tokens.matches(record, parsed, now=record.expires_at)


def test_roles_grow_viewer_submitter_admin_and_internal_only_heartbeats() -> None:
    table = {
        Role.VIEWER: {Action.READ},
        Role.SUBMITTER: {Action.READ, Action.SUBMIT, Action.CANCEL_OWN},
        Role.ADMIN: {
            Action.READ,
            Action.SUBMIT,
            Action.CANCEL_OWN,
            Action.CANCEL_ANY,
            Action.MANAGE_TOKENS,
        },
        INTERNAL: {Action.HEARTBEAT},
    }
    for role, allowed in table.items():
        assert {action for action in Action if allows(role, action)} == allowed, role


def test_a_revoked_token_is_refused_once_its_cached_record_is_older_than_the_ttl() -> None:
    token, record = tokens.mint("alice", Role.SUBMITTER)
    store: dict[str, TokenRecord] = {record.id: record}
    reads: list[str] = []
    now = [100.0]

    def lookup(token_id: str) -> TokenRecord | None:
        reads.append(token_id)
        return store.get(token_id)

    auth = Authenticator(lookup, "stwi_internal", cache_ttl=2.0, clock=lambda: now[0])
    identity = auth.verify(token)
    assert identity is not None and (identity.name, identity.role) == ("alice", Role.SUBMITTER)
    assert auth.verify(token) == identity and len(reads) == 1  # cached
    del store[record.id]
    now[0] += 1.9
    assert auth.verify(token) is not None  # still cached: at most the TTL
    now[0] += 0.2
    assert auth.verify(token) is None
    assert auth.verify("stwi_internal") is not None
    assert auth.verify("stwi_internal").internal  # type: ignore[union-attr]
    assert auth.verify("stwi_other") is None
    assert auth.verify("stw_0123456789ab_guess") is None


def test_credential_files_are_the_owners_alone(tmp_path: Path) -> None:
    credentials = ensure_files(tmp_path / "state")
    for path in (credentials.internal_file, credentials.admin_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert tokens.parse(credentials.admin_token) is not None
    assert credentials.internal_secret.startswith("stwi_")
    again = ensure_files(tmp_path / "state")  # kept across starts
    assert again.admin_token == credentials.admin_token
    with pytest.raises(ConfigurationError, match=r"client\.token-file"):
        read_secret(tmp_path / "missing", "client.token-file")


def test_a_client_finds_its_token_in_order(tmp_path: Path) -> None:
    (tmp_path / ".steward").mkdir()
    write_secret(tmp_path / ".steward" / "admin.token", "stw_local")
    write_secret(tmp_path / "mine.token", "stw_file")
    env = {"STEWARD_TOKEN": "stw_env"}

    def find(explicit: str | None, environ: dict[str, str], token_file: str = "") -> str | None:
        return find_token(explicit, token_file=token_file, workdir=tmp_path, environ=environ)

    assert find("stw_explicit", env, str(tmp_path / "mine.token")) == "stw_explicit"
    assert find(None, env, str(tmp_path / "mine.token")) == "stw_env"
    assert find(None, {}, str(tmp_path / "mine.token")) == "stw_file"
    assert find(None, {}) == "stw_local"
    assert find_token(None, token_file="", workdir=tmp_path / "elsewhere", environ={}) is None
    # Never the local cluster's admin token to addresses the caller named elsewhere.
    assert (
        find_token(None, token_file="", workdir=tmp_path, environ={}, local_cluster=False) is None
    )


def test_the_audit_file_gets_one_json_line_per_action_and_no_secret(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    audit.configure(path)
    audit.configure(path)  # once per file, however often configured
    handlers = [h for h in audit.log.handlers if getattr(h, "baseFilename", "") == str(path)]
    assert len(handlers) == 1
    request.addfinalizer(lambda: (audit.log.removeHandler(handlers[0]), handlers[0].close()))
    token, record = tokens.mint("alice", Role.SUBMITTER)
    who = Identity(name="alice", role=Role.SUBMITTER, token_id=record.id)
    audit.record("job.submit", who, client="10.0.0.7:5000", job_id="nightly")
    audit.record("job.cancel", who, client=None, outcome="denied", job_id="other")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["audit"], line["outcome"], line["target"]) for line in lines] == [
        ("job.submit", "ok", {"job_id": "nightly"}),
        ("job.cancel", "denied", {"job_id": "other"}),
    ]
    assert lines[0]["who"] == "alice" and lines[0]["token_id"] == record.id
    assert lines[0]["from"] == "10.0.0.7:5000"
    assert token not in path.read_text()


def test_the_client_sends_its_token_and_never_the_local_one_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"jobs": []})

    transport = httpx.MockTransport(answer)
    monkeypatch.delenv("STEWARD_TOKEN", raising=False)
    (tmp_path / ".steward").mkdir()
    write_secret(tmp_path / ".steward" / "admin.token", "stw_local")
    with Client(["http://jm:1"], transport=transport, token="stw_given", workdir=tmp_path) as c:
        c.jobs()
    with Client(["http://elsewhere:1"], transport=transport, workdir=tmp_path) as c:
        c.jobs()  # not the local cluster's JobManager: its admin token is not sent
    monkeypatch.setenv("STEWARD_TOKEN", "stw_env")
    with Client(["http://jm:1"], transport=transport, workdir=tmp_path) as c:
        c.jobs()
    assert seen == ["Bearer stw_given", None, "Bearer stw_env"]
