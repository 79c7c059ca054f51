"""Authentication and roles of the REST API, over the in-memory JobManager of test_rest_app.

Every route of :func:`create_app` (enumerated, so a new route is covered the day it is added)
answers 401 without a valid token and 403 to a role that may not; the process-level proofs are
in tests/e2e/cluster/test_auth.py.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Route
from test_rest_app import InMemoryJobManager, InMemoryTerm, submission

from steward.jobmanager.app import create_app
from steward.jobmanager.rest.auth import LOGIN_PAGE, PUBLIC_PATHS
from steward.security.audit import LOGGER
from steward.store.blob import BlobStore
from steward.testing.credentials import MemorySecurity, auth_headers, kit_admin_token
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat
from steward.wire.records import LeaderInfo
from steward.wire.tokens import Role

LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:1", epoch=3)
SAMPLE = {"job_id": "job-1", "sha256": "0" * 64, "token_id": "0123456789ab"}


@pytest.fixture
def leader(tmp_path: Path) -> InMemoryJobManager:
    return InMemoryJobManager(
        blobs=BlobStore(str(tmp_path)), dispatcher=InMemoryTerm(), known_leader=LEADER
    )


@pytest.fixture
def security() -> MemorySecurity:
    return MemorySecurity()


def as_caller(
    manager: InMemoryJobManager, security: MemorySecurity, token: str | None
) -> TestClient:
    headers = auth_headers(token) if token else {}
    return TestClient(create_app(manager, security.api), headers=headers, follow_redirects=False)


def every_operation(manager: InMemoryJobManager, security: MemorySecurity) -> list[tuple[str, str]]:
    """(method, path) of every route the app serves, the OpenAPI document's and /docs too."""
    app = create_app(manager, security.api)
    operations = []
    for route in _routes(app.routes):
        path = re.sub(r"\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "x"), route.path)
        for method in sorted(route.methods or ()):
            operations.append((method, path))
    return operations


def _routes(routes: list[Any]) -> list[Route]:
    """Every route, those of included routers too (FastAPI may keep them as a router)."""
    found: list[Route] = []
    for route in routes:
        if isinstance(route, APIRoute | Route):
            found.append(route)
        included = getattr(route, "original_router", None)
        if included is not None:
            found += _routes(included.routes)
    return found


def test_every_route_but_the_probes_answers_401_without_a_valid_token(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    expired = security.token("old", Role.ADMIN, expires_in=1e-6)
    revoked = security.token("gone", Role.ADMIN)
    security.tokens.delete(revoked.split("_")[1])
    operations = every_operation(leader, security)
    paths = {path for _method, path in operations}
    assert {"/v1/jobs", "/v1/tokens", "/openapi.json", "/docs", HEARTBEAT_PATH} <= paths
    refused = []
    for token in (None, "stw_0123456789ab_nope", "garbage", expired, revoked):
        api = as_caller(leader, security, token)
        for method, path in operations:
            answer = api.request(method, path, content=b"{}")
            if path == LOGIN_PAGE:  # public: its form answers a bad token itself (401, HTML)
                assert answer.headers["content-type"].startswith("text/html"), (method, path)
                continue
            if path in PUBLIC_PATHS:
                assert answer.status_code != 401, (method, path)
                continue
            if (path == "/ui" or path.startswith("/ui/")) and method in ("GET", "HEAD"):
                assert answer.status_code == 303, (token, method, path, answer.text)
                assert answer.headers["location"] == LOGIN_PAGE
                continue
            refused.append((method, path, answer.status_code))
            assert answer.status_code == 401, (token, method, path, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer"
            if method != "HEAD":  # no body
                assert answer.json()["code"] == "unauthorized"
            assert "job-1" not in answer.text
    assert leader.dispatcher is not None and leader.dispatcher.live == {}
    assert leader.dispatcher.beats == []
    assert len(refused) >= 5 * 10


def test_unknown_paths_and_jobs_are_401_before_404(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    stranger = as_caller(leader, security, None)
    for path in ("/v1/jobs/no-such-job", "/v1/nothing", "/v1/jobs/no-such-job/result"):
        assert stranger.get(path).status_code == 401
    admin = as_caller(leader, security, kit_admin_token())
    assert admin.get("/v1/jobs/no-such-job").status_code == 404


def test_a_viewer_reads_but_cannot_submit_cancel_or_manage_tokens(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    viewer = as_caller(leader, security, security.token("vera", Role.VIEWER))
    assert viewer.get("/v1/jobs").status_code == 200
    assert viewer.get("/v1/cluster").status_code == 200
    assert viewer.get("/openapi.json").status_code == 200
    for answer in (
        viewer.post("/v1/jobs", json=submission("job-v")),
        viewer.post("/v1/jobs/job-v/cancel"),
        viewer.put(f"/v1/contents/{'0' * 64}", content=b"x"),
        viewer.get("/v1/tokens"),
        viewer.post("/v1/tokens", json={"name": "x", "role": "admin"}),
    ):
        assert answer.status_code == 403, answer.text
        assert answer.json()["code"] == "forbidden"
    assert leader.dispatcher is not None and leader.dispatcher.live == {}


def test_jobs_record_their_submitter_and_only_it_or_an_admin_cancels(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    alice = as_caller(leader, security, security.token("alice", Role.SUBMITTER))
    bob = as_caller(leader, security, security.token("bob", Role.SUBMITTER))
    admin = as_caller(leader, security, kit_admin_token())
    body = submission("job-a")
    body["spec"]["submitter"] = "mallory"  # a client cannot claim another name
    created = alice.post("/v1/jobs", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["submitter"] == "alice"
    bob.post("/v1/jobs", json=submission("job-b"))

    refused = bob.post("/v1/jobs/job-a/cancel")
    assert refused.status_code == 403
    assert "alice" in refused.json()["message"]
    assert alice.post("/v1/jobs/job-a/cancel").status_code == 202
    assert admin.post("/v1/jobs/job-b/cancel").status_code == 202


def test_the_internal_credential_is_for_internal_routes_only(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    beat = Heartbeat(taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3)
    admin = as_caller(leader, security, kit_admin_token())
    internal = as_caller(leader, security, security.internal)
    refused = admin.post(HEARTBEAT_PATH, content=beat.to_json())
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    assert as_caller(leader, security, None).post(HEARTBEAT_PATH).status_code == 401
    assert leader.dispatcher is not None and leader.dispatcher.beats == []
    assert internal.post(HEARTBEAT_PATH, content=beat.to_json()).status_code == 200
    assert internal.get("/v1/jobs").status_code == 403
    assert internal.post("/v1/jobs", json=submission("job-i")).status_code == 403


def test_tokens_are_created_once_listed_without_secrets_and_revoked(
    leader: InMemoryJobManager, security: MemorySecurity
) -> None:
    admin = as_caller(leader, security, kit_admin_token())
    created = admin.post("/v1/tokens", json={"name": "ci", "role": "submitter"})
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    token_id = created.json()["info"]["id"]
    ci = as_caller(leader, security, token)
    assert ci.post("/v1/jobs", json=submission("job-ci")).status_code == 201

    listed = admin.get("/v1/tokens")
    assert listed.status_code == 200
    assert {t["name"] for t in listed.json()["tokens"]} >= {"admin", "ci"}
    secret = token.split("_", 2)[2]
    assert secret not in listed.text
    assert security.tokens.by_id[token_id].sha256 not in listed.text

    assert admin.delete(f"/v1/tokens/{token_id}").status_code == 204
    assert ci.get("/v1/jobs").status_code == 401
    assert admin.delete(f"/v1/tokens/{token_id}").status_code == 404
    assert admin.delete("/v1/tokens/not-an-id").status_code == 404
    bad = admin.post("/v1/tokens", json={"name": "x", "role": "root"})
    assert (bad.status_code, bad.json()["code"]) == (400, "bad_request")


def test_the_audit_log_has_one_json_line_per_action_and_no_token(
    leader: InMemoryJobManager, security: MemorySecurity, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    alice_token = security.token("alice", Role.SUBMITTER)
    alice = as_caller(leader, security, alice_token)
    admin = as_caller(leader, security, kit_admin_token())
    alice.post("/v1/jobs", json=submission("job-x"))
    alice.post("/v1/jobs/job-x/cancel")
    created = admin.post("/v1/tokens", json={"name": "ci", "role": "viewer"}).json()
    admin.delete(f"/v1/tokens/{created['info']['id']}")
    as_caller(leader, security, security.token("vera", Role.VIEWER)).post(
        "/v1/jobs", json=submission("job-y")
    )

    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert [(line["audit"], line["who"], line["outcome"]) for line in lines] == [
        ("job.submit", "alice", "ok"),
        ("job.cancel", "alice", "ok"),
        ("token.create", "admin", "ok"),
        ("token.revoke", "admin", "ok"),
        ("job.submit", "vera", "denied"),
    ]
    assert lines[0]["target"] == {"job_id": "job-x"}
    assert lines[0]["role"] == "submitter" and lines[0]["from"]
    text = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (alice_token, kit_admin_token(), created["token"]):
        assert secret not in text
        assert secret.split("_", 2)[2] not in text


def test_with_auth_off_everyone_is_an_admin(leader: InMemoryJobManager) -> None:
    from steward.jobmanager.rest.auth import ApiSecurity
    from steward.security.authenticator import Authenticator
    from steward.testing.credentials import MemoryTokens

    tokens = MemoryTokens()
    off = ApiSecurity(Authenticator(tokens.find, None, enabled=False), tokens)
    api = TestClient(create_app(leader, off))
    assert api.post("/v1/jobs", json=submission("job-o")).json()["submitter"] == "anonymous"
    beat = Heartbeat(taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3)
    assert api.post(HEARTBEAT_PATH, content=beat.to_json()).status_code == 200


def test_with_auth_on_a_jobmanager_or_taskmanager_without_the_internal_credential_refuses(
    tmp_path: Path,
) -> None:
    from steward.config import SecuritySettings
    from steward.errors import ConfigurationError
    from steward.jobmanager.security import api_security
    from steward.security.credentials import internal_credential, write_secret

    no_file = SecuritySettings(auth_enabled=True, internal_token_file="", audit_file="")
    session: Any = type("NoSession", (), {"layout": None})()  # never asked before it refuses
    with pytest.raises(ConfigurationError, match=r"security\.internal\.token-file") as refused:
        api_security(no_file, session)
    assert refused.value.key == "security.internal.token-file"
    with pytest.raises(ConfigurationError, match=r"security\.internal\.token-file"):
        internal_credential(no_file)
    missing = SecuritySettings(True, str(tmp_path / "nowhere"), "")
    with pytest.raises(ConfigurationError, match="cannot read"):
        internal_credential(missing)
    write_secret(tmp_path / "internal.token", "stwi_x")
    present = SecuritySettings(True, str(tmp_path / "internal.token"), "")
    assert internal_credential(present) == "stwi_x"
    assert internal_credential(SecuritySettings(False, "", "")) is None


def test_client_certificates_as_credentials_need_a_tls_that_asks_for_them() -> None:
    from steward.config import SecuritySettings, TlsSettings
    from steward.errors import ConfigurationError
    from steward.jobmanager.security import api_security

    wants = SecuritySettings(True, "", "", client_certificates=True)
    session: Any = type("NoSession", (), {"layout": None})()  # never asked before it refuses
    plain = TlsSettings(False, None, None, None)
    tls_only = TlsSettings(True, None, None, None)
    for tls in (None, plain, tls_only):
        with pytest.raises(ConfigurationError, match=r"rest\.ssl\.client-auth") as refused:
            api_security(wants, session, tls)
        assert refused.value.key == "security.auth.client-certificates"
