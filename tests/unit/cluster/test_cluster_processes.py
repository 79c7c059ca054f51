"""Process identity: the cluster signals a recorded process only while pid, create time and
marker all match, so a reused pid is never signalled. Real child processes, no fakes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from recorded import record_cluster, spawn_sleeper

from steward.cluster import launcher
from steward.cluster.local import LocalCluster
from steward.cluster.workdir import ProcessEntry, Role
from steward.errors import LocalClusterError
from steward.zookeeper.layout import port_is_free
from support import wait_until

MARKER = "314159"  # `sleep 314159`: the marker is an argument of the command line


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], ProcessEntry]]:
    child, entry = spawn_sleeper(tmp_path, MARKER, Role.TASKMANAGER, "tm-1")
    # Until the exec completes, the child's argv is empty or the parent's, and a record is
    # identified by pid and start time alone (detached.find_live): wait for the real argv.
    wait_until(lambda: MARKER in psutil.Process(child.pid).cmdline(), 10, message="exec'd")
    try:
        yield child, entry
    finally:
        child.kill()
        child.wait()


def test_a_recorded_process_is_found_while_it_is_the_same_one(
    sleeper: tuple[subprocess.Popen[bytes], ProcessEntry],
) -> None:
    child, entry = sleeper
    assert launcher.live_process(entry) is not None
    child.kill()
    child.wait()
    assert launcher.live_process(entry) is None


@pytest.mark.parametrize(
    "change", [{"create_time_shift": -3600.0}, {"marker": "/another/steward.toml"}]
)
def test_a_process_that_only_shares_the_pid_is_not_ours(
    sleeper: tuple[subprocess.Popen[bytes], ProcessEntry], change: dict[str, object]
) -> None:
    _child, entry = sleeper
    impostor = entry.model_copy(
        update={
            "create_time": entry.create_time + float(change.get("create_time_shift", 0.0)),
            "marker": change.get("marker", entry.marker),
        }
    )
    assert launcher.live_process(impostor) is None


def test_stop_never_signals_a_process_whose_create_time_differs(
    sleeper: tuple[subprocess.Popen[bytes], ProcessEntry],
) -> None:
    # Given a record whose pid is now used by a process started at another time
    child, entry = sleeper
    reused = entry.model_copy(update={"create_time": entry.create_time - 3600.0})
    # When stopping it
    assert launcher.stop([reused], timeout=1.0) == []
    # Then that process was not touched
    assert child.poll() is None
    assert psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE


def test_stop_terminates_a_process_that_is_ours(
    sleeper: tuple[subprocess.Popen[bytes], ProcessEntry],
) -> None:
    _child, entry = sleeper
    assert launcher.stop([entry], timeout=5.0) == [entry]
    assert launcher.live_process(entry) is None


def test_cluster_stop_leaves_a_reused_pid_alone(
    tmp_path: Path, sleeper: tuple[subprocess.Popen[bytes], ProcessEntry]
) -> None:
    # Given a crashed cluster whose recorded TaskManager pid now belongs to someone else
    child, entry = sleeper
    record_cluster(tmp_path, entry.model_copy(update={"create_time": entry.create_time + 3600.0}))
    # When `steward cluster stop` runs
    stopped = LocalCluster(tmp_path).stop(timeout=1.0)
    # Then nothing was stopped and the process lives on
    assert stopped == []
    assert child.poll() is None


def test_cluster_status_reports_dead_and_live_processes(
    tmp_path: Path, sleeper: tuple[subprocess.Popen[bytes], ProcessEntry]
) -> None:
    _child, entry = sleeper
    dead = entry.model_copy(update={"id": "tm-2", "create_time": 1.0})
    record_cluster(tmp_path, entry, dead)
    report = LocalCluster(tmp_path).status()
    assert [(p.id, p.alive) for p in report.processes] == [("tm-1", True), ("tm-2", False)]
    assert not report.healthy


def test_ports_prefer_the_masters_file_then_the_previous_run(tmp_path: Path) -> None:
    # A free remembered port is reused, so the JobManagers keep their addresses
    remembered = launcher.free_port()
    ports = launcher.choose_ports([None, None], [remembered])
    assert ports[0] == remembered
    assert ports[1] != remembered
    assert all(port_is_free(port) for port in ports)


def test_a_required_port_in_use_is_an_error() -> None:
    with subprocess.Popen(
        ["python3", "-c", "import socket,time; s=socket.socket(); s.bind(('127.0.0.1', 0));"
         " s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    ) as holder:  # fmt: skip
        try:
            assert holder.stdout is not None
            port = int(holder.stdout.readline())
            wait_until(lambda: not port_is_free(port), 5)
            with pytest.raises(LocalClusterError, match=f"port {port} of JobManager 1"):
                launcher.choose_ports([port], [])
            # a remembered port that is taken is simply replaced
            assert launcher.choose_ports([None], [port]) != [port]
        finally:
            holder.kill()
