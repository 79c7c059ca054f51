"""A TaskManager replaced under another id: its successor archives the logs it left (issue 25).

Real processes, real signals, one work directory for every TaskManager: ``tm-dead`` runs an
attempt and is SIGKILLed under it, so the attempt's log stays unarchived in
``work/tm-dead/``; ``tm-frozen`` is SIGSTOPped past its session (no registration left, but a
live process still holds its folder's lock), with an unarchived log of its own. ``tm-next``
then starts under a new id in the same work directory: it archives tm-dead's log, which every
JobManager then serves from the archive, and removes tm-dead's folder; it leaves tm-frozen's
folder alone. Without the takeover the first test fails (503: nobody has the log); without
the lock the second does (the frozen one's folder is taken).
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from steward.store.blob import BlobStore
from steward.store.log_archive import LogArchive
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.jobs import NoRestart
from steward.wire.logs import SOURCE_HEADER, TASKMANAGER_HEADER
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

SLEEPER = """
import time

def main(ctx):
    for number in range(5):
        print(f"line {number} before the TaskManager dies", flush=True)
    time.sleep(600)
"""
JOB = "orphaned-log"
FROZEN_JOB = "frozen-log"
FROZEN_LINE = b"a line the frozen TaskManager's attempt wrote\n"


@dataclass
class Replaced:
    cluster: ProcessCluster
    leader: Proc
    standby: Proc
    work: Path
    storage: str

    def log(self, proc: Proc, job_id: str) -> httpx.Response:
        return httpx.get(
            f"{proc.address}/v1/jobs/{job_id}/attempts/1/log",
            headers=self.cluster.headers,
            verify=self.cluster.tls.context,
            timeout=30,
        )


def _registered(cluster: ProcessCluster, tm_id: str) -> bool:
    with cluster.client() as client:
        return any(tm.id == tm_id for tm in client.cluster().taskmanagers)


@pytest.fixture(scope="module")
def replaced(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[Replaced]:
    workdir = tmp_path_factory.mktemp("replaced")
    cluster = ProcessCluster(workdir, zookeeper.connect_string, f"t-pred-{uuid.uuid4().hex[:8]}")
    cluster.settings["high-availability.zookeeper.session-timeout"] = "4s"
    work = workdir / "work"
    try:
        leader = cluster.start_jobmanager("jm-1")
        assert cluster.wait_ready(taskmanagers=0).id == leader.id
        standby = cluster.start_jobmanager("jm-2")
        dead = cluster.start_taskmanager("tm-dead")
        cluster.wait_ready(taskmanagers=1)
        pipeline = workdir / "sleeper.py"
        pipeline.write_text(SLEEPER)
        log = work / "tm-dead" / JOB / "1" / "runner.log"
        with cluster.client() as client:
            client.submit(pipeline, job_id=JOB, restart=NoRestart())
            wait_until(
                lambda: log.is_file() and b"line 4" in log.read_bytes(), 60, message="it logged"
            )
        # tm-frozen looks at its siblings while tm-dead still runs (it leaves it alone), and is
        # frozen before tm-dead dies: only tm-next can take tm-dead's folder over.
        frozen = cluster.start_taskmanager("tm-frozen")
        wait_until(lambda: _registered(cluster, "tm-frozen"), 30, message="tm-frozen registered")
        frozen_log = work / "tm-frozen" / FROZEN_JOB / "1" / "runner.log"
        frozen_log.parent.mkdir(parents=True)
        frozen_log.write_bytes(FROZEN_LINE)
        frozen.signal(signal.SIGSTOP)
        dead.signal(signal.SIGKILL)
        for gone in ("tm-dead", "tm-frozen"):
            wait_until(lambda g=gone: not _registered(cluster, g), 30, message=f"{gone} expired")
        assert not (log.parent / "runner.log.archived").exists()
        cluster.start_taskmanager("tm-next")
        yield Replaced(
            cluster, leader, standby, work, cluster.settings["high-availability.storage-dir"]
        )
    finally:
        cluster.stop()


def test_the_successor_archives_a_dead_taskmanagers_log_and_removes_its_folder(
    replaced: Replaced,
) -> None:
    wait_until(lambda: not (replaced.work / "tm-dead").exists(), 60, message="folder taken over")
    for proc in (replaced.leader, replaced.standby):
        answer = replaced.log(proc, JOB)
        assert answer.status_code == 200, (proc.id, answer.text)
        assert answer.headers[SOURCE_HEADER] == "archive"
        assert answer.headers[TASKMANAGER_HEADER] == "tm-dead"
        assert b"line 4 before the TaskManager dies" in answer.content
    with replaced.cluster.client() as client:
        assert client.job(JOB).state in (JobState.FAILED, JobState.RESTARTING, JobState.SCHEDULED)


def test_a_folder_whose_taskmanager_still_lives_is_left_alone(replaced: Replaced) -> None:
    wait_until(lambda: not (replaced.work / "tm-dead").exists(), 60, message="the scan ran")
    frozen = replaced.work / "tm-frozen" / FROZEN_JOB / "1"
    assert (frozen / "runner.log").read_bytes() == FROZEN_LINE
    assert not (frozen / "runner.log.archived").exists()
    assert LogArchive(BlobStore(replaced.storage)).open(FROZEN_JOB, 1) is None
