"""The local cluster's lifecycle with a real managed ZooKeeper and stand-in JobManagers and
TaskManagers (fake_node.py, same command line): start, refuse a second start, status, stop,
start over on the same ZooKeeper data, purge, and a failed start that cleans up after itself.

The same flow with the real processes is tests/e2e/cluster/test_local_cluster.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

from steward.cluster import launcher
from steward.cluster.hosts import Topology
from steward.cluster.local import LocalCluster, StartOptions
from steward.cluster.settings import UserSettings
from steward.cluster.workdir import ClusterState, Role, load_state
from steward.errors import LocalClusterError, LocalClusterStartError
from steward.ha.acl import AclMode, DigestCredential, ZooKeeperAccess

FAKE_NODE = Path(__file__).with_name("fake_node.py")

pytestmark = pytest.mark.zookeeper


@pytest.fixture(autouse=True)
def _fake_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    def command(
        config: Path, role: Role, proc_id: str, port: int | None = None, bind: str | None = None
    ) -> list[str]:
        assert bind is None  # every fake node runs here
        argv = [sys.executable, str(FAKE_NODE), "--config", str(config)]
        if port is not None:
            argv += ["-D", f"jobmanager.port={port}"]
        return [*argv, role.value, "--id", proc_id]

    monkeypatch.setattr(launcher, "command", command)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.stop(timeout=5.0)


def options(jobmanagers: int = 2, taskmanagers: int = 2, timeout: float = 30.0) -> StartOptions:
    return StartOptions(
        Topology((None,) * jobmanagers, taskmanagers),
        UserSettings({}, environ={}),
        timeout=timeout,
    )


def pids(state: ClusterState) -> list[int]:
    return [entry.pid for entry in state.processes]


def test_start_status_stop_and_start_over_on_the_same_data(local: LocalCluster) -> None:
    # Given a started cluster of 2 JobManagers and 2 TaskManagers
    progress: list[str] = []
    state = local.start(options(), progress=progress.append)
    assert [e.id for e in state.processes] == ["zk-1", "jm-1", "jm-2", "tm-1", "tm-2"]
    assert state.managed_zookeeper
    assert "2/2 TaskManagers registered" in progress[-1]
    # And a ZooKeeper credential of its own, private, named in the processes' configuration
    digest = local.state_dir.zookeeper_digest
    assert digest.stat().st_mode & 0o777 == 0o600
    credential = digest.read_text()
    assert f'"high-availability.zookeeper.digest-file" = "{digest}"' in (
        local.state_dir.config.read_text()
    )
    # Then status shows every process alive and the leader
    report = local.status()
    assert report.healthy
    assert report.leader == "jm-1"
    assert [p.id for p in report.processes if p.leader] == ["jm-1"]
    # And a second start is refused while it runs
    with pytest.raises(LocalClusterError, match="is running: jm-1"):
        local.start(options())
    # Given something stored in its ZooKeeper (with its credential: the state is closed, even
    # here where the fake processes write nothing, since start registers its admin token)
    access = ZooKeeperAccess(AclMode.CREATOR, DigestCredential.read(digest)).kazoo_options()
    zk = KazooClient(hosts=state.quorum, **access)
    zk.start(timeout=10)
    zk.create(f"/steward/{state.cluster_id}/kept", b"1", makepath=True)
    zk.stop()
    zk.close()
    # When stopped, nothing it started runs any more
    stopped = local.stop()
    assert sorted(e.id for e in stopped) == ["jm-1", "jm-2", "tm-1", "tm-2", "zk-1"]
    assert not any(psutil.pid_exists(pid) and _ours(pid, state) for pid in pids(state))
    assert not local.status().healthy
    # When started again, it is the same cluster on the same ZooKeeper data
    again = local.start(options())
    assert again.cluster_id == state.cluster_id
    assert digest.read_text() == credential  # its state in ZooKeeper is protected by it
    zk = KazooClient(hosts=again.quorum, **access)
    zk.start(timeout=10)
    try:
        assert zk.exists(f"/steward/{state.cluster_id}/kept") is not None
    finally:
        zk.stop()
        zk.close()


def test_purge_deletes_the_state_directory(local: LocalCluster) -> None:
    local.start(options(jobmanagers=1, taskmanagers=1))
    local.stop(purge=True)
    assert not local.state_dir.root.exists()


def test_a_failed_start_names_the_process_shows_its_log_and_stops_everything(
    local: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NODE_FAIL", "tm-2")
    with pytest.raises(LocalClusterStartError) as caught:
        local.start(options())
    message = str(caught.value)
    assert "taskmanager tm-2" in message
    assert "exited while starting" in message
    assert "boom: tm-2 cannot start" in message
    state = load_state(local.state_dir)
    assert state is not None
    assert all(launcher.live_process(entry) is None for entry in state.processes)
    assert local.status().processes[0].alive is False  # the managed ZooKeeper too


def test_a_cluster_not_ready_in_time_is_reported_and_stopped(
    local: LocalCluster, monkeypatch: pytest.MonkeyPatch, zk_quorum: str
) -> None:
    # Nodes that run but never answer. The session's ZooKeeper, already serving: the 3 s are
    # the nodes' alone (a managed server's JVM can take longer than that to start when loaded).
    monkeypatch.setattr(launcher, "command", lambda config, role, proc_id, port=None, bind=None: [
        sys.executable, "-c", "import time; time.sleep(60)", "--config", str(config)
    ])  # fmt: skip
    user = UserSettings({"high-availability.zookeeper.quorum": zk_quorum}, environ={})
    start = StartOptions(Topology((None,), 1), user, timeout=3.0)
    with pytest.raises(LocalClusterStartError, match=r"jobmanager jm-1 .* was not ready within 3s"):
        local.start(start)
    state = load_state(local.state_dir)
    assert state is not None
    assert all(launcher.live_process(entry) is None for entry in state.processes)


def _ours(pid: int, state: ClusterState) -> bool:
    entry = next(e for e in state.processes if e.pid == pid)
    return launcher.live_process(entry) is not None
