"""The testing kit's process cluster against the session's real ZooKeeper: a JobManager and a
TaskManager start, the cluster is ready, an unexpected death fails ``check_alive`` with the
log, an expected one does not, and ``stop`` ends every member."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from steward.testing.processes import ProcessCluster
from steward.testing.waiting import wait_until

pytestmark = pytest.mark.zookeeper


def test_start_wait_ready_and_stop(tmp_path: Path, zk_quorum: str, cluster_id: str) -> None:
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id)
    try:
        jobmanager = cluster.start_jobmanager("jm-1")
        taskmanager = cluster.start_taskmanager("tm-1", slots=1)

        leader = cluster.wait_ready(taskmanagers=1)

        assert leader is jobmanager
        assert jobmanager.address.startswith("http://127.0.0.1:")
        assert "-v" in taskmanager.popen.args  # type: ignore[operator]
        assert "taskmanager.numberOfTaskSlots=1" in taskmanager.popen.args  # type: ignore[operator]
        assert (tmp_path / "logs" / "jm-1.log").exists()

        taskmanager.popen.kill()  # a death nobody announced: a crash
        taskmanager.popen.wait(10)
        with pytest.raises(AssertionError, match="taskmanager tm-1 exited"):
            cluster.check_alive()

        jobmanager.signal(signal.SIGKILL)  # an announced one is expected
        wait_until(lambda: not jobmanager.alive(), 10, "the JobManager gone")
        taskmanager.signalled = True
        cluster.check_alive()
    finally:
        cluster.stop()

    assert not any(proc.alive() for proc in cluster.procs)
