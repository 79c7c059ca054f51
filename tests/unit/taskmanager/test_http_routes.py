"""Every route of the TaskManager's port, as its clients see it (an app over a folder of real
log files, the in-memory token store): the probes public, every other path 401 without a
credential, each credential on its own side (403), the log's bytes and headers, and each error
as the ``ErrorBody`` the JobManagers' proxy parses, with the messages FastAPI gave (issue 26:
the port is served by Starlette since; these answers must not have moved). The proxy's side
is tests/e2e/cluster/test_logs.py; ``/metrics``, test_http_metrics.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from steward.taskmanager.http.app import create_app
from steward.taskmanager.http.files import AttemptLogs, Phase, RemovedLogs
from steward.taskmanager.http.state import Node
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.wire.logs import LOG_MEDIA_TYPE, MAX_ATTEMPT, START_HEADER
from steward.wire.tokens import Role

LOG = b"line 1\nline 2\nline 3\n"
USER_PATH = "/v1/attempts/job-1/1/log"
INTERNAL_PATH = "/internal" + USER_PATH


class Port:
    """One TaskManager's app: ``job-1``'s attempt 1 has a log, ``gone``'s was removed."""

    def __init__(self, root: Path, ready: str | None = None) -> None:
        self.security = MemorySecurity()
        removed = RemovedLogs()
        removed.note("gone", 1, at=0.0)
        logs = AttemptLogs(root, lambda _job, _n: Phase.ENDED, removed)
        (root / "job-1" / "1").mkdir(parents=True)
        (root / "job-1" / "1" / "runner.log").write_bytes(LOG)
        self.app = create_app(Node("tm-1", logs, lambda: ready), self.security.api.authenticator)

    def anonymous(self) -> TestClient:
        return TestClient(self.app)

    def viewer(self) -> TestClient:
        token = self.security.token("reader", Role.VIEWER)
        return TestClient(self.app, headers=auth_headers(token))

    def internal(self) -> TestClient:
        return TestClient(self.app, headers=auth_headers(self.security.internal))


@pytest.fixture
def port(tmp_path: Path) -> Port:
    return Port(tmp_path)


def _error(answer: Any) -> tuple[int, dict[str, Any]]:
    return answer.status_code, answer.json()


def test_the_probes_answer_anyone(tmp_path: Path) -> None:
    anyone = Port(tmp_path / "ready").anonymous()
    healthz = anyone.get("/healthz")
    assert (healthz.status_code, healthz.json()) == (
        200,
        {"status": "ok", "id": "tm-1", "role": "taskmanager"},
    )
    assert healthz.headers["content-type"] == "application/json"
    readyz = anyone.get("/readyz")
    assert (readyz.status_code, readyz.json()) == (
        200,
        {"ready": True, "id": "tm-1", "role": "taskmanager"},
    )
    fencing = Port(tmp_path / "fencing", ready="fencing itself").anonymous()
    assert _error(fencing.get("/readyz")) == (
        503,
        {"code": "not_ready", "message": "fencing itself"},
    )


@pytest.mark.parametrize(
    "path", [USER_PATH, INTERNAL_PATH, "/metrics", "/nowhere", "/openapi.json", "/docs"]
)
def test_every_other_path_needs_a_credential(port: Port, path: str) -> None:
    refused = port.anonymous().get(path)
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == "unauthorized"
    assert refused.headers["www-authenticate"] == "Bearer"


def test_each_credential_is_taken_on_its_own_side_only(port: Port) -> None:
    assert _error(port.internal().get(USER_PATH)) == (
        403,
        {
            "code": "forbidden",
            "message": "the cluster's internal credential is for /internal/ only",
        },
    )
    assert _error(port.viewer().get(INTERNAL_PATH)) == (
        403,
        {"code": "forbidden", "message": "/internal/ takes the cluster's internal credential only"},
    )


@pytest.mark.parametrize("side", ["viewer", "internal"])
def test_the_log_is_served_whole_from_an_offset_and_by_tail(port: Port, side: str) -> None:
    client, path = (
        (port.viewer(), USER_PATH) if side == "viewer" else (port.internal(), INTERNAL_PATH)
    )
    whole = client.get(path)
    assert (whole.status_code, whole.content) == (200, LOG)
    assert whole.headers["content-type"] == LOG_MEDIA_TYPE
    assert whole.headers[START_HEADER] == "0"
    assert whole.headers["cache-control"] == "no-store"
    part = client.get(path, params={"offset": 7})
    assert (part.content, part.headers[START_HEADER]) == (LOG[7:], "7")
    tail = client.get(path, params={"tail": 1, "follow": "false"})
    assert (tail.content, tail.headers[START_HEADER]) == (b"line 3\n", str(len(LOG) - 7))


def test_a_log_never_here_is_404_and_one_removed_by_the_retention_410(port: Port) -> None:
    viewer = port.viewer()
    assert _error(viewer.get("/v1/attempts/job-1/2/log")) == (
        404,
        {
            "code": "log_not_found",
            "message": "attempt 2 of job job-1 has no log on this TaskManager",
        },
    )
    status, body = _error(viewer.get("/v1/attempts/gone/1/log"))
    assert (status, body["code"]) == (410, "log_removed")
    assert "removed at 1970-01-01T00:00:00Z by taskmanager.workdir.retention" in body["message"]


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        (
            "/v1/attempts/job-1/0/log",
            {},
            "path.attempt: Input should be greater than or equal to 1",
        ),
        (
            f"/v1/attempts/job-1/{MAX_ATTEMPT + 1}/log",
            {},
            f"path.attempt: Input should be less than or equal to {MAX_ATTEMPT}",
        ),
        (
            "/v1/attempts/job-1/one/log",
            {},
            "path.attempt: Input should be a valid integer, unable to parse string as an integer",
        ),
        (USER_PATH, {"offset": -1}, "query.offset: Input should be greater than or equal to 0"),
        (USER_PATH, {"tail": 0}, "query.tail: Input should be greater than or equal to 1"),
        (
            USER_PATH,
            {"follow": "maybe"},
            "query.follow: Input should be a valid boolean, unable to interpret input",
        ),
        (USER_PATH, {"folow": "true"}, "query.folow: Extra inputs are not permitted"),
    ],
)
def test_a_request_that_does_not_parse_is_400_naming_what(
    port: Port, path: str, params: dict[str, Any], message: str
) -> None:
    for client, where in ((port.viewer(), path), (port.internal(), "/internal" + path)):
        assert _error(client.get(where, params=params)) == (
            400,
            {"code": "bad_request", "message": message},
        )


def test_a_job_id_that_cannot_name_a_folder_is_400(port: Port) -> None:
    status, body = _error(port.viewer().get("/v1/attempts/.hidden/1/log"))
    assert (status, body["code"]) == (400, "bad_request")
    assert body["message"].startswith("invalid job id '.hidden'")


def test_unknown_paths_and_methods_are_error_bodies(port: Port) -> None:
    viewer = port.viewer()
    assert _error(viewer.get("/v1/nowhere")) == (404, {"code": "not_found", "message": "Not Found"})
    assert _error(viewer.post(USER_PATH)) == (
        405,
        {"code": "method_not_allowed", "message": "Method Not Allowed"},
    )


def test_a_taskmanager_process_imports_no_fastapi() -> None:
    # What `steward taskmanager` imports before its first line of work (lint-imports checks
    # the static imports; this, whatever a dependency imports at run time too).
    code = (
        "import sys\n"
        "import steward.cli.main, steward.cli.taskmanager, steward.taskmanager.manager\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'fastapi'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
