"""Logs that outlive the attempt and its TaskManager (issue 25, part 1).

One cluster for the module (two JobManagers, one TaskManager, archived logs kept a day and
checked every second): a job prints numbered lines and finishes; its log is read once from the
TaskManager; then that TaskManager is stopped and its whole work folder deleted. The whole log
is still served, from the archive in the HA storage, by the leader and the standby (whole, by
tail, from an offset, followed) and by ``steward logs``; and the leader's log rounds delete an
archived log older than the retention while this one stays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.logs import SOURCE_HEADER, START_HEADER, TASKMANAGER_HEADER
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

PRINTER = """
def main(ctx):
    for number in range(int(ctx.args[0])):
        print(f"printed line {number}", flush=True)
    return {"lines": int(ctx.args[0])}
"""
LINES = 40
JOB = "archived-printer"
BATCH = "livy-0"
"""A job Livy's routes know as batch 0."""
PATH = f"/v1/jobs/{JOB}/attempts/1/log"


@dataclass
class Gone:
    """The module's cluster, after the job's TaskManager and its folder are gone."""

    cluster: ProcessCluster
    leader: Proc
    standby: Proc
    whole: bytes

    def get(self, proc: Proc, path: str = PATH, **params: Any) -> httpx.Response:
        return httpx.get(
            proc.address + path,
            params=params,
            headers=self.cluster.headers,
            verify=self.cluster.tls.context,
            timeout=30,
        )


@pytest.fixture(scope="module")
def gone(tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble) -> Iterator[Gone]:
    workdir = tmp_path_factory.mktemp("archived-logs")
    cluster = ProcessCluster(workdir, zookeeper.connect_string, f"t-arch-{uuid.uuid4().hex[:8]}")
    cluster.settings["jobmanager.logs.max-age"] = "1d"
    cluster.settings["jobmanager.logs.check-interval"] = "1s"
    try:
        leader = cluster.start_jobmanager("jm-1")
        assert cluster.wait_ready(taskmanagers=0).id == leader.id
        standby = cluster.start_jobmanager("jm-2")
        taskmanager = cluster.start_taskmanager("tm-gone")
        cluster.wait_ready(taskmanagers=1)
        pipeline = workdir / "printer.py"
        pipeline.write_text(PRINTER)
        with cluster.client() as client:
            client.submit(pipeline, args=[str(LINES)], job_id=JOB)
            assert client.wait(JOB, timeout=60).state == JobState.FINISHED
            whole = b"".join(client.log(JOB, 1))
            client.submit(pipeline, args=["3"], job_id=BATCH)
            assert client.wait(BATCH, timeout=60).state == JobState.FINISHED
        assert b"printed line 39" in whole
        taskmanager.signal(15)
        wait_until(lambda: not taskmanager.alive(), 30, message="tm-gone stopped")
        shutil.rmtree(workdir / "work" / "tm-gone")
        yield Gone(cluster, leader, standby, whole)
    finally:
        cluster.stop()


def test_every_jobmanager_serves_the_whole_log_from_the_archive(gone: Gone) -> None:
    for proc in (gone.leader, gone.standby):
        answer = gone.get(proc)
        assert answer.status_code == 200, (proc.id, answer.text)
        assert answer.content == gone.whole
        assert answer.headers[SOURCE_HEADER] == "archive"
        assert answer.headers[TASKMANAGER_HEADER] == "tm-gone"
        assert answer.headers[START_HEADER] == "0"


def test_tail_offset_and_follow_work_on_an_archived_log(gone: Gone) -> None:
    for proc in (gone.leader, gone.standby):
        tail = gone.get(proc, tail=3)
        assert tail.content.decode().splitlines() == gone.whole.decode().splitlines()[-3:]
        assert int(tail.headers[START_HEADER]) == len(gone.whole) - len(tail.content)
        middle = len(gone.whole) // 2
        part = gone.get(proc, offset=middle)
        assert (part.content, part.headers[START_HEADER]) == (gone.whole[middle:], str(middle))
        followed = gone.get(proc, follow="true")  # complete: it ends at its end
        assert followed.content == gone.whole
        past = gone.get(proc, offset=len(gone.whole) + 10)
        assert (past.content, past.headers[START_HEADER]) == (b"", str(len(gone.whole)))


def test_livys_log_route_reads_a_batch_log_from_the_archive(gone: Gone) -> None:
    for proc in (gone.leader, gone.standby):
        answer = gone.get(proc, "/batches/0/log", **{"from": 0, "size": 100})
        assert answer.status_code == 200, (proc.id, answer.text)
        body = answer.json()
        assert [line for line in body["log"] if line.startswith("printed line")] == [
            "printed line 0",
            "printed line 1",
            "printed line 2",
        ]
        assert body["total"] == len(body["log"])


def test_steward_logs_reads_it_from_the_archive(gone: Gone, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    env["STEWARD_TOKEN"] = kit_admin_token()
    command = [sys.executable, "-m", "steward.cli", "-D", f"rest.address={gone.standby.address}"]
    tls = gone.cluster.settings.get("rest.ssl.ca")
    if tls:
        command += ["-D", f"rest.ssl.ca={tls}"]

    def steward(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*command, *args], cwd=tmp_path, env=env, capture_output=True, timeout=60, check=False
        )

    done = steward("logs", JOB)
    assert (done.returncode, done.stdout) == (0, gone.whole), done.stderr
    done = steward("logs", JOB, "--attempt", "1", "--tail", "2", "-f")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == gone.whole.decode().splitlines()[-2:]


def test_the_leaders_rounds_delete_archived_logs_past_their_age(gone: Gone) -> None:
    logs = gone.cluster.workdir / "storage" / "logs"
    ancient = logs / "ancient-job" / "1.log"
    ancient.parent.mkdir()
    ancient.write_bytes(b"archived two days ago\n")
    two_days_ago = time.time() - 2 * 86400
    os.utime(ancient, (two_days_ago, two_days_ago))

    wait_until(lambda: not ancient.parent.exists(), 30, message="the old log deleted")
    assert (logs / JOB / "1.log").read_bytes() == gone.whole
