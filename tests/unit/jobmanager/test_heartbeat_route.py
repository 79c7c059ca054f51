"""The heartbeat's lean path (steward.jobmanager.rest.heartbeat_route): an internal caller's
heartbeat answered before FastAPI, every other request passed on to the full app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import anyio
import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from steward.config import Configuration
from steward.config.configuration import validate
from steward.jobmanager.app import create_app
from steward.jobmanager.rest.backend import ApiBackend
from steward.jobmanager.rest.heartbeat_route import HeartbeatRoute
from steward.jobmanager.rest.internal import MAX_HEARTBEAT_BYTES
from steward.store.blob import BlobStore
from steward.testing.credentials import MemorySecurity, auth_headers, kit_admin_token
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply
from steward.wire.records import LeaderInfo

BEAT = Heartbeat(taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3)
LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:1", epoch=3)


@dataclass
class Term:
    beats: list[Heartbeat] = field(default_factory=list)
    stopped: bool = False

    def take_heartbeat(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply:
        self.beats.append(beat)
        return HeartbeatReply(epoch=3, leader="jm-1")


@dataclass
class Backend:
    """What the heartbeat asks of a JobManager: its term (None: a standby), id and leader."""

    dispatcher: Term | None
    id: str = "jm-1"
    blobs: BlobStore | None = None
    config: Configuration | None = None

    def leader(self) -> LeaderInfo | None:
        return LEADER


@dataclass
class App:
    """The full app behind the lean path: counts what reaches it, answers 418."""

    reached: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append(f"{scope['method']} {scope['path']}")
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def security() -> MemorySecurity:
    return MemorySecurity()


def lean(backend: Backend, security: MemorySecurity) -> tuple[TestClient, App]:
    app = App()
    route = HeartbeatRoute(
        app, cast(ApiBackend, backend), security.api.authenticator, anyio.CapacityLimiter(4)
    )
    return TestClient(route), app


def test_an_internal_callers_heartbeat_is_answered_before_the_app(
    security: MemorySecurity,
) -> None:
    term = Term()
    client, app = lean(Backend(term), security)
    answer = client.post(
        HEARTBEAT_PATH, content=BEAT.to_json(), headers=auth_headers(security.internal)
    )
    assert answer.status_code == 200
    assert HeartbeatReply.from_json(answer.content).leader == "jm-1"
    assert term.beats == [BEAT]
    assert app.reached == []


@pytest.mark.parametrize(
    ("method", "path", "token"),
    [
        ("POST", HEARTBEAT_PATH, None),
        ("POST", HEARTBEAT_PATH, "not-the-credential"),
        ("POST", HEARTBEAT_PATH, "admin"),
        ("GET", HEARTBEAT_PATH, "internal"),
        ("POST", "/v1/jobs", "internal"),
    ],
)
def test_every_other_request_goes_to_the_full_app(
    security: MemorySecurity, method: str, path: str, token: str | None
) -> None:
    term = Term()
    client, app = lean(Backend(term), security)
    credential = {"internal": security.internal, "admin": kit_admin_token()}.get(token or "", token)
    headers = auth_headers(credential) if credential else {}
    answer = client.request(method, path, content=BEAT.to_json(), headers=headers)
    assert answer.status_code == 418
    assert app.reached == [f"{method} {path}"]
    assert term.beats == []


def test_a_standby_answers_409_naming_the_leader(security: MemorySecurity) -> None:
    client, _app = lean(Backend(None, id="jm-2"), security)
    refused = client.post(
        HEARTBEAT_PATH, content=BEAT.to_json(), headers=auth_headers(security.internal)
    )
    assert refused.status_code == 409
    assert refused.json() == {
        "code": "not_leader",
        "message": "jm-2 is not the leader",
        "leader": {"id": "jm-1", "address": "http://127.0.0.1:1", "epoch": 3},
    }


def test_a_bad_or_oversized_body_is_an_error_body_and_reaches_no_term(
    security: MemorySecurity,
) -> None:
    term = Term()
    client, _app = lean(Backend(term), security)
    headers = auth_headers(security.internal)
    garbled = client.post(HEARTBEAT_PATH, content=b"[]", headers=headers)
    assert (garbled.status_code, garbled.json()["code"]) == (400, "bad_request")
    huge = client.post(HEARTBEAT_PATH, content=b" " * (MAX_HEARTBEAT_BYTES + 1), headers=headers)
    assert (huge.status_code, huge.json()["code"]) == (413, "too_large")
    assert huge.headers["connection"] == "close"
    assert term.beats == []


def test_the_jobmanagers_app_has_the_lean_path_outermost(
    security: MemorySecurity, tmp_path: object
) -> None:
    config = validate({"security.auth.enabled": "false"}, sources={})
    backend = Backend(Term(), blobs=BlobStore(str(tmp_path)), config=config)
    app = create_app(cast(ApiBackend, backend), security.api)
    assert isinstance(app.build_middleware_stack(), HeartbeatRoute)
