"""Hostile input against a real cluster: refused with a clear 4xx, nothing stored, and
secrets never shown.

Every hostile submission is sent to the leader and to the standby (which checks the body's
shape before forwarding); after each, the jobs ZooKeeper knows and the files of blob storage
are what they were. Header abuse goes over raw sockets: no client library sends it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import stat
import tarfile
import zipfile
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.bad_input.conftest import run_cli
from e2e.bad_input.hostile import (
    assert_nothing_stored,
    assert_refused,
    auth_headers,
    each_jobmanager,
    stored_state,
)
from steward.testing.processes import ProcessCluster
from steward.wire.redaction import REPLACEMENT
from support import wait_until

pytestmark = pytest.mark.zookeeper

GOOD = b"def main(ctx):\n    return {'ok': True}\n"


def zipped(*entries: tuple[zipfile.ZipInfo | str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("main.py", GOOD)
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


@cache
def zip_bomb() -> bytes:
    """48 MB of zeros deflated: built on first use (not at collection, in every worker), once."""
    return zipped(("zeros.bin", bytes(48 << 20)))


def entry(name: str, kind: int = stat.S_IFREG) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (kind | 0o777) << 16
    return info


def body(spec: dict[str, Any], filename: str = "p.py", data: bytes = GOOD) -> bytes:
    artifact = {"filename": filename, "data_b64": base64.b64encode(data).decode()}
    return json.dumps({"spec": spec, "artifact": artifact}).encode()


# Each archive is a builder, called by its test: building them here would cost every xdist
# worker the zip bomb's deflate at collection, whether or not it runs this module.
HOSTILE_ZIPS = [
    pytest.param(partial(zipped, ("../evil.py", b"x = 1\n")), "unsafe entry", id="dot-dot"),
    pytest.param(partial(zipped, ("/etc/cron.d/evil", b"x")), "unsafe entry", id="absolute"),
    pytest.param(partial(zipped, ("C:/evil.py", b"x = 1\n")), "unsafe entry", id="drive-letter"),
    pytest.param(partial(zipped, ("..\\evil.py", b"x = 1\n")), "unsafe entry", id="backslash"),
    pytest.param(
        partial(zipped, (entry("shadow", stat.S_IFLNK), b"/etc/shadow")),
        "symbolic link",
        id="symlink",
    ),
    pytest.param(partial(zipped, (entry("pipe", stat.S_IFIFO), b"")), "FIFO", id="fifo"),
    pytest.param(partial(zipped, (entry("sda", stat.S_IFBLK), b"")), "device", id="device"),
    pytest.param(zip_bomb, "zip bomb", id="zip-bomb"),
]


@pytest.mark.parametrize(("build", "needle"), HOSTILE_ZIPS)
def test_hostile_zip_artifacts_are_400_and_store_nothing(
    cluster: ProcessCluster, build: Callable[[], bytes], needle: str
) -> None:
    data = build()
    before = stored_state(cluster)
    for address in each_jobmanager(cluster):
        response = httpx.post(
            f"{address}/v1/jobs",
            content=body({"job_id": "hostile-zip"}, "etl.zip", data),
            headers=auth_headers(cluster),
            timeout=60,
        )
        assert_refused(response, 400, needle)
    assert_nothing_stored(cluster, before)


def tarred(member: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        good = tarfile.TarInfo("environment/bin/activate")
        good.size = 3
        archive.addfile(good, io.BytesIO(b"# a"))
        member.size = len(data) if member.isreg() else 0
        archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


def tar_entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


HOSTILE_ARCHIVES = [
    pytest.param(
        "env.tar.gz", partial(tarred, tar_entry("../evil.sh"), b"x"), "outside", id="tar-dot-dot"
    ),
    pytest.param(
        "env.tar.gz",
        partial(tarred, tar_entry("environment/shadow", tarfile.SYMTYPE, "/etc/shadow")),
        "absolute",
        id="tar-symlink-out",
    ),
    pytest.param(
        "env.tar.gz",
        partial(tarred, tar_entry("environment/sda", tarfile.BLKTYPE)),
        "special",
        id="tar-dev",
    ),
    pytest.param(
        "env.zip", partial(zipped, ("../evil.py", b"x = 1\n")), "unsafe member", id="zip-dot-dot"
    ),
    pytest.param("env.zip", zip_bomb, "zip bomb", id="zip-bomb"),
    pytest.param(
        "env.tar.gz",
        partial(bytes, b"not an archive at all" * 100),
        "cannot be read",
        id="not-archive",
    ),
    pytest.param("env.rar", zipped, "not a .zip", id="unknown-kind"),
]


@pytest.mark.parametrize(("filename", "build", "needle"), HOSTILE_ARCHIVES)
def test_hostile_archives_are_400_at_submission_and_store_no_job(
    cluster: ProcessCluster, filename: str, build: Callable[[], bytes], needle: str
) -> None:
    data = build()
    # Given the archive in the content store (files travel before the job that names them)
    sha256 = hashlib.sha256(data).hexdigest()
    leader = each_jobmanager(cluster)[0]
    put = httpx.put(
        f"{leader}/v1/contents/{sha256}", content=data, headers=auth_headers(cluster), timeout=60
    )
    assert put.status_code in (200, 201), put.text
    before = stored_state(cluster)
    archive = {"kind": "archive", "filename": filename, "sha256": sha256, "size": len(data)}
    for address in each_jobmanager(cluster):
        # When a job naming it as --archives is submitted
        response = httpx.post(
            f"{address}/v1/jobs",
            content=body({"job_id": "hostile-archive", "dependencies": [archive]}),
            headers=auth_headers(cluster),
            timeout=60,
        )
        # Then it is refused with the archive's fault, and no job is stored
        assert_refused(response, 400, filename, needle)
        assert response.json()["code"] == "bad_archive"
    assert_nothing_stored(cluster, before)


def deep(depth: int) -> bytes:
    return b'{"spec": {"job_id": "deep", "x": ' + b"[" * depth + b"]" * depth + b"}}"


HOSTILE_BODIES = [
    pytest.param(deep(40), "deeper than", id="nested-40"),
    pytest.param(deep(100_000), "", id="nested-100000"),
    pytest.param(
        json.dumps({"spec": {"job_id": "wide", "args": [[]] * 60_000}}).encode(),
        "objects and arrays",
        id="60000-arrays",
    ),
    pytest.param(b'{"spec": {"job_id": "latin\xff"}}', "", id="not-utf8"),
    pytest.param(b'{"spec": {"job_id": "sur\\ud800"}}', "", id="lone-surrogate"),
    pytest.param(body({"job_id": "name", "name": "x\x1b]0;owned\x07"}), "control", id="escape"),
    pytest.param(body({"job_id": "bidi", "name": "txt\u202eyp.exe"}), "control", id="bidi"),
    pytest.param(body({"job_id": "label", "labels": {"a\nb": "c"}}), "control", id="label"),
    pytest.param(body({"job_id": "id\x00nul"}), "job_id", id="nul-in-id"),
    pytest.param(body({"job_id": "id\u00e9"}), "job_id", id="non-ascii-id"),
    pytest.param(
        body({"job_id": "redact", "spark_conf": {"spark.redaction.regex": "(open"}}),
        "spark.redaction.regex",
        id="bad-redaction-regex",
    ),
]


@pytest.mark.parametrize(("content", "needle"), HOSTILE_BODIES)
def test_hostile_request_bodies_are_400_and_store_nothing(
    cluster: ProcessCluster, content: bytes, needle: str
) -> None:
    before = stored_state(cluster)
    for address in each_jobmanager(cluster):
        response = httpx.post(
            f"{address}/v1/jobs", content=content, headers=auth_headers(cluster), timeout=60
        )
        assert_refused(response, 400, needle)
    assert_nothing_stored(cluster, before)


@pytest.mark.parametrize("raw_id", ["%FF%FE", "%00", "a%0Ab", "%1B%5B2J", "%E2%80%AE", "x" * 5000])
def test_hostile_path_parameters_are_404_not_500(cluster: ProcessCluster, raw_id: str) -> None:
    for address in each_jobmanager(cluster):
        for method, suffix in (("GET", ""), ("GET", "/result"), ("POST", "/cancel")):
            response = httpx.request(
                method,
                f"{address}/v1/jobs/{raw_id}{suffix}",
                headers=auth_headers(cluster),
                timeout=30,
            )
            assert_refused(response, 404)
            assert "\x1b" not in response.text and "\x00" not in response.text
    for sha in ("%FF" * 32, "a" * 63 + "%00"):
        response = httpx.head(f"{address}/v1/contents/{sha}", headers=auth_headers(cluster))
        assert response.status_code == 400, response


def raw_request(address: str, request: bytes, *, shut_write: bool = False) -> bytes:
    """Send ``request`` as is and return what the server answers before closing (or 10 s)."""
    host, port = address.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        if shut_write:
            conn.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def test_header_abuse_is_refused_and_the_jobmanager_keeps_serving(
    cluster: ProcessCluster,
) -> None:
    before = stored_state(cluster)
    address = each_jobmanager(cluster)[0]
    host = address.removeprefix("http://")
    huge = b"GET /v1/jobs HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n" % (
        host.encode(),
        b"a" * 200_000,
    )
    assert 400 <= status_of(raw_request(address, huge)) < 500
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
    flood = b"GET /v1/jobs HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (host.encode(), many)
    assert 400 <= status_of(raw_request(address, flood)) < 500
    # A Content-Length that claims more than is sent: the body never completes; one that
    # claims less: the cut body is not JSON and the rest is not a request (uvicorn closes the
    # connection). Either way nothing is stored and the JobManager goes on serving.
    payload = body({"job_id": "liar"})
    headers = b"".join(f"{k}: {v}\r\n".encode() for k, v in auth_headers(cluster).items())
    longer = b"POST /v1/jobs HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n%s" % (
        host.encode(),
        headers,
        len(payload) + 1000,
        payload,
    )
    assert status_of(raw_request(address, longer, shut_write=True)) in (0, 400)
    shorter = b"POST /v1/jobs HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n%s" % (
        host.encode(),
        headers,
        len(payload) // 2,
        payload,
    )
    assert status_of(raw_request(address, shorter, shut_write=True)) in (0, 400)
    assert_nothing_stored(cluster, before)
    assert httpx.get(f"{address}/healthz", timeout=10).status_code == 200


LEAKY = """
import json, sys

def main(ctx):
    conf = ctx.spec.spark_conf
    with open(ctx.args[0], "w") as seen:
        json.dump({"conf": conf, "args": ctx.args}, seen)
    raise RuntimeError(
        "cannot reach the store with key " + conf["spark.hadoop.fs.s3a.secret.key"]
        + " as " + ctx.args[2] + " password=" + ctx.args[4]
    )
"""

SECRETS = ("S3-SECRET-b6c1e2", "tok-0d9a8f7e", "pw-7e1f0c")


def test_secrets_reach_the_job_and_are_shown_nowhere(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    s3_secret, token, password = SECRETS
    pipeline = tmp_path / "leaky.py"
    pipeline.write_text(LEAKY)
    seen = tmp_path / "seen.json"
    conf = {"spark.hadoop.fs.s3a.secret.key": s3_secret, "spark.app.name": "leaky-app"}
    args = [str(seen), "--api-token", token, "--password", password]
    with cluster.client() as client:
        client.submit(
            pipeline, job_id="leaky", args=args, spark_conf=conf, restart={"kind": "none"}
        )
        result = client.wait("leaky", timeout=120)
    assert result.state.value == "FAILED"
    # The attempt saw the real values.
    assert json.loads(seen.read_text()) == {"conf": conf, "args": args}
    # The REST API (leader and standby), in every view.
    for address in each_jobmanager(cluster):
        for path in ("/v1/jobs/leaky", "/v1/jobs/leaky/result", "/v1/jobs"):
            text = httpx.get(address + path, headers=auth_headers(cluster), timeout=30).text
            assert not [s for s in SECRETS if s in text], (path, text)
        shown = httpx.get(
            address + "/v1/jobs/leaky/result", headers=auth_headers(cluster), timeout=30
        )
        assert REPLACEMENT in shown.text
    # The CLI.
    for command in (("status", "leaky"), ("result", "leaky"), ("list",), ("status", "leaky")):
        run = run_cli(cluster, *command)
        assert not [s for s in SECRETS if s in run.stdout + run.stderr], (command, run)
    # Logs: every process's own log and the attempt's runner log.
    logs = [*(cluster.workdir / "logs").glob("*.log"), *(cluster.workdir / "work").rglob("*.log")]
    assert logs
    for log in logs:
        text = log.read_text(errors="replace")
        assert not [s for s in SECRETS if s in text], log


WAITING = b"""
import os, time

def main(ctx):
    deadline = time.monotonic() + 120
    while not os.path.exists(ctx.args[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {"ok": True}
"""


def test_a_taskmanagers_folders_are_its_users_alone(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    pipeline = tmp_path / "private.py"
    pipeline.write_bytes(WAITING)
    go = tmp_path / "go"
    storage = cluster.workdir / "storage"
    with cluster.client() as client:
        client.submit(
            pipeline, job_id="private", args=[str(go)], spark_conf={"spark.password": "x"}
        )
        # While it runs, its job graph is in blob storage (cleanup removes it afterwards).
        wait_until(lambda: list(storage.rglob("jobgraphs/private/*")), 60, message="graph")
        for blob in (p for p in storage.rglob("*") if p.is_file()):
            assert stat.S_IMODE(blob.stat().st_mode) == 0o600, blob
        go.touch()
        assert client.wait("private", timeout=120).state.value == "FINISHED"
    work = cluster.workdir / "work"
    attempt = work / "tm-1" / "private" / "1"
    for folder in (work / "tm-1", work / ".cache", attempt, attempt / "artifact"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((attempt / "artifact" / "private.py").stat().st_mode) == 0o600
    for defaults in attempt.rglob("spark-defaults.conf"):
        assert stat.S_IMODE(defaults.stat().st_mode) == 0o600, defaults
