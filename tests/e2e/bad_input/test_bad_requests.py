"""Bad requests against a real cluster: each gets a clear error and changes nothing.

Through the CLI (exit code != 0, one ``error: ...`` line on stderr, no traceback) and the REST
API (4xx with ``{code, message}``), asked of the leader and of the standby (which forwards).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.bad_input.conftest import assert_clear_error, run_cli
from steward.testing.credentials import auth_headers
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

GOOD = "def main(ctx):\n    return {'ok': True}\n"

# Appends "<job> <attempt> <pid>" to args[0], then waits (two minutes at most) until the file
# args[1] exists: the test holds the job running as long as it needs, and not longer.
RECORDING = """
import os, time

def main(ctx):
    with open(ctx.args[0], "a") as out:
        out.write(f"{ctx.job_id} {ctx.attempt} {os.getpid()}\\n")
    deadline = time.monotonic() + 120
    while not os.path.exists(ctx.args[1]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"pid": os.getpid()}
"""


def _body(spec: dict[str, Any], filename: str = "p.py", data: bytes = GOOD.encode()) -> bytes:
    artifact = {"filename": filename, "data_b64": base64.b64encode(data).decode()}
    return json.dumps({"spec": spec, "artifact": artifact}).encode()


def _each_jobmanager(cluster: ProcessCluster) -> list[str]:
    leader = cluster.leader()
    assert leader is not None
    standby = next(p for p in cluster.jobmanagers() if p.id != leader.id)
    return [leader.address, standby.address]


def _assert_error(response: httpx.Response, status: int, code: str, *needles: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["code"] == code, body
    assert body["message"] and "Traceback" not in body["message"], body
    for needle in needles:
        assert needle in body["message"], (needle, body)


def _job_ids(cluster: ProcessCluster) -> set[str]:
    with cluster.client() as client:
        return {view.job_id for view in client.jobs()}


def _job_state(cluster: ProcessCluster, job_id: str) -> JobState:
    with cluster.client() as client:
        return client.job(job_id).state


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"job_id": "bad-restart", "restart_strategy": {"kind": "sometimes"}}, "restart"),
        (
            {"job_id": "bad-delay", "restart_strategy": {"kind": "fixed-delay", "delay": "x"}},
            "delay",
        ),
        ({"job_id": "bad-slots", "slots": "many"}, "slots"),
        ({"job_id": "neg-slots", "slots": -1}, "slots"),
        ({"job_id": "bad-args", "args": "not-a-list"}, "args"),
        ({"job_id": "unknown-key", "colour": "blue"}, "colour"),
        ({"job_id": "../../etc"}, "job_id"),
        ({"job_id": "bad-kind", "kind": "sometimes"}, "kind"),
        ({"job_id": "bad-entry", "entrypoint": "1 + 1"}, "entrypoint"),
    ],
)
def test_malformed_spec_is_400_and_submits_nothing(
    cluster: ProcessCluster, spec: dict[str, Any], needle: str
) -> None:
    for address in _each_jobmanager(cluster):
        response = httpx.post(
            f"{address}/v1/jobs", content=_body(spec), timeout=30, headers=auth_headers()
        )
        _assert_error(response, 400, "bad_request", needle)
    assert spec["job_id"] not in _job_ids(cluster)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", ""),
        (b"[]", ""),
        (json.dumps({"spec": {}}).encode(), "artifact"),
        (
            json.dumps({"spec": {}, "artifact": {"filename": "p.py", "data_b64": "!!"}}).encode(),
            "base64",
        ),
    ],
)
def test_malformed_request_body_is_400(cluster: ProcessCluster, body: bytes, needle: str) -> None:
    for address in _each_jobmanager(cluster):
        response = httpx.post(
            f"{address}/v1/jobs", content=body, timeout=30, headers=auth_headers()
        )
        _assert_error(response, 400, "bad_request", needle)


@pytest.mark.parametrize(
    ("filename", "data", "needle"),
    [
        ("garbage.zip", b"\x00\x01 this is no zip \xff" * 50, "zip"),
        ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\xff\xfe" * 40, "binary.py"),
        ("syntax.py", b"def main(ctx)\n    return 1\n", "syntax.py"),
        ("notes.txt", b"hello", ".py"),
        ("../escape.py", GOOD.encode(), "escape.py"),
    ],
)
def test_garbage_artifact_is_rejected(
    cluster: ProcessCluster, filename: str, data: bytes, needle: str
) -> None:
    job_id = "garbage-" + filename.strip("./").replace(".", "-")
    for address in _each_jobmanager(cluster):
        response = httpx.post(
            f"{address}/v1/jobs",
            content=_body({"job_id": job_id}, filename, data),
            timeout=30,
            headers=auth_headers(),
        )
        _assert_error(response, 400, "bad_request", needle)
    assert job_id not in _job_ids(cluster)


def test_cli_rejects_bad_submissions_clearly(cluster: ProcessCluster, tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    missing = run_cli(cluster, "submit", str(tmp_path / "nowhere.py"), "--detach")
    assert_clear_error(missing, "nowhere.py", "does not exist")
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"PK no zip at all")
    assert_clear_error(run_cli(cluster, "submit", str(garbage), "--detach"), "garbage.zip")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\x00\xff\xfe\x00garbage" * 100)
    assert_clear_error(run_cli(cluster, "submit", str(binary), "--detach"), "binary.py")
    bad_restart = run_cli(cluster, "submit", str(good), "--restart", "sometimes", "--detach")
    assert_clear_error(bad_restart, "sometimes")
    bad_conf = run_cli(cluster, "submit", str(good), "--conf", "no-equals-sign", "--detach")
    assert_clear_error(bad_conf, "--conf")
    bad_id = run_cli(cluster, "submit", str(good), "--job-id", "../x", "--detach")
    assert_clear_error(bad_id, "job_id")
    assert not {"good", "garbage", "binary"} & {j.split("-")[0] for j in _job_ids(cluster)}


@pytest.mark.parametrize("job_id", ["no-such-job", "../../etc/passwd", "x" * 300, "über"])
def test_unknown_job_id_is_404_and_a_clear_cli_error(cluster: ProcessCluster, job_id: str) -> None:
    for address in _each_jobmanager(cluster):
        quoted = httpx.URL(f"{address}/v1/jobs/").join(job_id.replace("/", "%2F"))
        for method, suffix in (("GET", ""), ("POST", "/cancel"), ("GET", "/result")):
            response = httpx.request(
                method, str(quoted) + suffix, timeout=30, headers=auth_headers()
            )
            # A "/" in the id makes it another path: 404 not_found, still an ErrorBody.
            code = "not_found" if "/" in job_id else "job_not_found"
            _assert_error(response, 404, code)
    if job_id in ("no-such-job", "../../etc/passwd"):  # the CLI is slow to start: two ids
        for command in ("status", "cancel", "result"):
            assert_clear_error(run_cli(cluster, command, job_id), "no job")


def test_duplicate_job_id_answers_with_the_existing_job_and_never_runs_twice(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    pipeline = tmp_path / "recording.py"
    pipeline.write_text(RECORDING)
    ground, gate = tmp_path / "starts.log", tmp_path / "gate"

    def starts() -> list[str]:
        return ground.read_text().splitlines() if ground.exists() else []

    args = ["--job-id", "twice", "--detach", str(pipeline), "--", str(ground), str(gate)]
    assert run_cli(cluster, "submit", *args).returncode == 0
    wait_until(starts, 30, message="first attempt started")
    # Again while it runs, the very same submission: it is that job (idempotent: the same id
    # and body, issue 23 item 4), named; nothing new starts.
    again = run_cli(cluster, "submit", *args)
    assert again.returncode == 0, again
    assert "twice" in again.stdout and "Traceback" not in again.stderr
    for address in _each_jobmanager(cluster):
        data = pipeline.read_bytes()
        body = _body({"job_id": "twice", "args": [str(ground), "0"]}, "recording.py", data)
        response = httpx.post(
            f"{address}/v1/jobs", content=body, timeout=30, headers=auth_headers()
        )
        _assert_error(response, 409, "job_exists", "twice")
    assert not _job_state(cluster, "twice").is_terminal  # all of the above while it ran
    gate.touch()
    with cluster.client() as client:
        result = client.wait("twice", timeout=60)
        assert result.state.value == "FINISHED"
        # Again once it finished, with another body: a changed spec, refused as for a running
        # job (never run again, nor answered with a result that is not its own).
        for address in _each_jobmanager(cluster):
            body = _body({"job_id": "twice", "args": [str(ground), "0"]}, "recording.py", data)
            response = httpx.post(
                f"{address}/v1/jobs", content=body, timeout=30, headers=auth_headers()
            )
            _assert_error(response, 409, "job_exists", "twice")
            assert "result" not in response.json()
        # The very same submission again: its result comes back (job_terminated), said clearly.
        assert_clear_error(run_cli(cluster, "submit", *args), "twice", "FINISHED")
        assert client.job("twice").state is JobState.FINISHED
    assert len(starts()) == 1, starts()
