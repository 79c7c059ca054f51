"""Logs from anywhere (issue 14): a TaskManager serves its attempts' logs on its own
authenticated port, every JobManager (the standby too) proxies them, and ``steward logs`` reads
them from a folder that has no TaskManager in it.

One cluster for the module (two JobManagers, one TaskManager with the default retention):
a job prints numbered lines slowly, so a follower sees them appear while it runs; the same
log is then read whole, by tail and from an offset through the leader, the standby, the
TaskManager's own port and the CLI. Last, that TaskManager stops (its logs: from the archive
in the HA storage; without that copy, 503 naming it) and one with a zero retention runs a
short job, whose log is then answered 410 (removed by the retention) by the TaskManager and
from the archive by the JobManagers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.errors import ApiError
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.logs import SOURCE_HEADER, START_HEADER, TASKMANAGER_HEADER
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

PRINTER = """
import sys, time

def main(ctx):
    lines, interval = int(ctx.args[0]), float(ctx.args[1])
    for number in range(lines):
        print(f"printed line {number}", flush=True)
        time.sleep(interval)
    return {"lines": lines}
"""
LINES = 12
INTERVAL = 0.4


class Logs:
    """The module's cluster and the job whose log the tests read."""

    def __init__(self, cluster: ProcessCluster, leader: Proc, standby: Proc, pipeline: Path):
        self.cluster = cluster
        self.leader = leader
        self.standby = standby
        self.pipeline = pipeline
        self.job_id = ""
        self.followed: list[tuple[float, bytes]] = []

    def get(self, proc_or_url: Proc | str, path: str, **params: Any) -> httpx.Response:
        base = proc_or_url if isinstance(proc_or_url, str) else proc_or_url.address
        return httpx.get(
            base + path,
            params=params,
            headers=self.cluster.headers,
            verify=self.cluster.tls.context,
            timeout=30,
        )

    def taskmanager_address(self, tm_id: str) -> str:
        view = self.cluster.cluster_view()
        assert view is not None
        found = [tm for tm in view["taskmanagers"] if tm["id"] == tm_id]
        assert found and found[0]["http_address"], view
        address: str = found[0]["http_address"]
        return address


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble) -> Iterator[Logs]:
    workdir = tmp_path_factory.mktemp("logs-cluster")
    cluster = ProcessCluster(workdir, zookeeper.connect_string, f"t-logs-{uuid.uuid4().hex[:8]}")
    try:
        leader = cluster.start_jobmanager("jm-1")
        assert cluster.wait_ready(taskmanagers=0).id == leader.id
        standby = cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-keep")
        cluster.wait_ready(taskmanagers=1)
        wait_until(lambda: _ready(cluster, standby), 30, message="the standby is ready")
        pipeline = workdir / "printer.py"
        pipeline.write_text(PRINTER)
        yield Logs(cluster, leader, standby, pipeline)
    finally:
        cluster.stop()


def _ready(cluster: ProcessCluster, proc: Proc) -> bool:
    try:
        return httpx.get(proc.address + "/readyz", verify=cluster.tls.context).is_success
    except httpx.HTTPError:
        return False


def _lines(data: bytes) -> list[str]:
    return [line for line in data.decode().splitlines() if line.startswith("printed line")]


def test_following_a_running_attempt_shows_lines_as_they_are_printed(logs: Logs) -> None:
    with logs.cluster.client() as client:
        job = client.submit(logs.pipeline, args=[str(LINES), str(INTERVAL)], job_id="printer")
        logs.job_id = job.job_id
        wait_until(lambda: client.job("printer").attempts, 30, message="an attempt started")
        for block in client.log("printer", follow=True):
            logs.followed.append((time.monotonic(), block))
        assert client.job("printer").attempts[-1].number == 1
    data = b"".join(block for _, block in logs.followed)
    assert _lines(data) == [f"printed line {n}" for n in range(LINES)]
    # They came as they were printed (LINES * INTERVAL apart), not in one piece at the end.
    arrivals = [at for at, block in logs.followed if b"printed line" in block]
    assert arrivals[-1] - arrivals[0] > (LINES - 3) * INTERVAL


def test_every_jobmanager_serves_the_whole_log_by_offset_and_by_tail(logs: Logs) -> None:
    assert logs.job_id, "the following test ran first"
    whole = b"".join(block for _, block in logs.followed)
    path = f"/v1/jobs/{logs.job_id}/attempts/1/log"
    for proc in (logs.leader, logs.standby):
        answer = logs.get(proc, path)
        assert answer.status_code == 200, answer.text
        assert answer.content == whole
        assert answer.headers[TASKMANAGER_HEADER] == "tm-keep"
        assert answer.headers[START_HEADER] == "0"
        tail = logs.get(proc, path, tail=3)
        assert tail.content.decode().splitlines() == whole.decode().splitlines()[-3:]
        assert int(tail.headers[START_HEADER]) == len(whole) - len(tail.content)
        middle = len(whole) // 2
        part = logs.get(proc, path, offset=middle)
        assert part.content == whole[middle:]
        assert part.headers[START_HEADER] == str(middle)


def test_the_cli_reads_it_from_a_folder_without_any_local_log(logs: Logs, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    env["STEWARD_TOKEN"] = kit_admin_token()
    command = [sys.executable, "-m", "steward.cli", "-D", f"rest.address={logs.standby.address}"]
    tls = logs.cluster.settings.get("rest.ssl.ca")
    if tls:
        command += ["-D", f"rest.ssl.ca={tls}"]

    def steward(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*command, *args], cwd=tmp_path, env=env, capture_output=True, timeout=60, check=False
        )

    whole = b"".join(block for _, block in logs.followed)
    done = steward("logs", logs.job_id)
    assert (done.returncode, done.stdout) == (0, whole), done.stderr
    done = steward("logs", logs.job_id, "--attempt", "1", "--tail", "2", "-f")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == whole.decode().splitlines()[-2:]
    assert b"attempt 1 of printer ended (FINISHED); the job is FINISHED" in done.stderr
    assert not list(tmp_path.iterdir())  # nothing was read or written here


def test_the_taskmanager_port_serves_it_to_tokens_only(logs: Logs) -> None:
    address = logs.taskmanager_address("tm-keep")
    path = f"/v1/attempts/{logs.job_id}/1/log"
    answer = logs.get(address, path)
    assert answer.status_code == 200
    assert answer.content == b"".join(block for _, block in logs.followed)
    verify = logs.cluster.tls.context
    for url in (address + path, address + "/internal" + path, logs.leader.address + path):
        refused = httpx.get(url, verify=verify, timeout=10)
        assert refused.status_code == 401, (url, refused.text)
        assert refused.json()["code"] == "unauthorized"
    proxied = f"/v1/jobs/{logs.job_id}/attempts/1/log"
    for proc in (logs.leader, logs.standby):
        refused = httpx.get(proc.address + proxied, verify=verify, timeout=10)
        assert refused.status_code == 401
    # A user's token is not the internal credential: the JobManagers' route is not its.
    assert logs.get(address, "/internal" + path).status_code == 403
    assert httpx.get(address + "/healthz", verify=verify, timeout=10).json()["id"] == "tm-keep"


def test_unknown_attempts_and_bad_ids_are_clear_errors(logs: Logs) -> None:
    address = logs.taskmanager_address("tm-keep")
    answer = logs.get(logs.leader, f"/v1/jobs/{logs.job_id}/attempts/5/log")
    assert (answer.status_code, answer.json()["code"]) == (404, "attempt_not_found"), answer.text
    answer = logs.get(logs.standby, "/v1/jobs/no-such-job/attempts/1/log")
    assert (answer.status_code, answer.json()["code"]) == (404, "job_not_found")
    answer = logs.get(address, "/v1/attempts/never-ran-here/1/log")
    assert (answer.status_code, answer.json()["code"]) == (404, "log_not_found")
    for bad in ("..%2F..%2Fetc", ".hidden", "a%00b"):
        answer = logs.get(address, f"/v1/attempts/{bad}/1/log")
        assert answer.status_code in (400, 404), (bad, answer.text)
        assert "root:" not in answer.text
    for query in ({"offset": -1}, {"tail": 0}, {"follow": "maybe"}):
        answer = logs.get(logs.leader, f"/v1/jobs/{logs.job_id}/attempts/1/log", **query)
        assert (answer.status_code, answer.json()["code"]) == (400, "bad_request"), query
    assert logs.get(address, f"/v1/attempts/{logs.job_id}/0/log").status_code == 400
    for where, path in (
        (logs.leader, f"/v1/jobs/{logs.job_id}/attempts/1/log"),
        (address, f"/v1/attempts/{logs.job_id}/1/log"),
    ):  # a parameter no route knows (a typo of follow) is refused, naming it
        answer = logs.get(where, path, folow="true")
        assert (answer.status_code, answer.json()["code"]) == (400, "bad_request"), where
        assert "folow" in answer.json()["message"]


def test_a_gone_taskmanager_is_named_and_a_removed_log_is_410(logs: Logs) -> None:
    whole = b"".join(block for _, block in logs.followed)
    keep = next(p for p in logs.cluster.procs if p.id == "tm-keep")
    keep.signal(15)
    wait_until(lambda: not keep.alive(), 30, message="tm-keep stopped")
    path = f"/v1/jobs/{logs.job_id}/attempts/1/log"
    # Its TaskManager archived it (issue 25): served from the HA storage now.
    archived = wait_until(
        lambda: (a := logs.get(logs.standby, path)).headers.get(SOURCE_HEADER) and a,
        30,
        message="the log of a stopped TaskManager comes from the archive",
    )
    assert (archived.status_code, archived.content) == (200, whole)
    # Without the archived copy, the gone TaskManager is named.
    (logs.cluster.workdir / "storage" / "logs" / logs.job_id / "1.log").unlink()
    gone = logs.get(logs.standby, path)
    assert (gone.status_code, gone.json()["code"]) == (503, "taskmanager_gone")
    assert "TaskManager tm-keep" in gone.json()["message"]
    with pytest.raises(ApiError, match="tm-keep"), logs.cluster.client(timeout=10) as client:
        client.log(logs.job_id, 1)

    logs.cluster.start_taskmanager("tm-short", settings={"taskmanager.workdir.retention": "0s"})
    with logs.cluster.client() as client:
        client.submit(logs.pipeline, args=["2", "0"], job_id="short")
        assert client.wait("short", timeout=60).state == JobState.FINISHED
        address = logs.taskmanager_address("tm-short")
        removed = wait_until(
            lambda: (a := logs.get(address, "/v1/attempts/short/1/log")).status_code == 410 and a,
            30,
            message="the retention removed the log",
        )
        assert removed.json()["code"] == "log_removed"
        assert "taskmanager.workdir.retention" in removed.json()["message"]
        for proc in (logs.leader, logs.standby):  # removed there only once archived
            answer = logs.get(proc, "/v1/jobs/short/attempts/1/log")
            assert (answer.status_code, answer.headers[SOURCE_HEADER]) == (200, "archive")
            assert _lines(answer.content) == ["printed line 0", "printed line 1"]
        assert not (logs.cluster.workdir / "work" / "tm-short" / "short" / "1").exists()
