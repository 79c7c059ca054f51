"""masters/workers files: parsing, this-machine checks, and what they decide."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from steward.cluster.hosts import HostEntry, is_local, parse_hosts, plan_topology, read_hosts
from steward.errors import LocalClusterError


def test_hosts_skip_comments_and_blank_lines() -> None:
    text = "# JobManagers\nlocalhost\n\n127.0.0.1:8082  # the second\n[::1]:8083\n::1\n"
    assert parse_hosts(text, source="masters", allow_port=True) == [
        HostEntry("localhost", None, 2),
        HostEntry("127.0.0.1", 8082, 4),
        HostEntry("::1", 8083, 5),
        HostEntry("::1", None, 6),
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("localhost 8081\n", "one host per line"),
        ("localhost:http\n", "bad port"),
        ("localhost:70000\n", "bad port"),
    ],
)
def test_malformed_lines_name_the_file_and_line(text: str, needle: str) -> None:
    with pytest.raises(LocalClusterError, match=f"masters:1: .*{needle}"):
        parse_hosts(text, source="masters", allow_port=True)


def test_workers_take_no_port() -> None:
    with pytest.raises(LocalClusterError, match="not host:port"):
        parse_hosts("localhost:8081\n", source="workers", allow_port=False)


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST", "127.0.0.1", "127.0.1.1", "::1", socket.gethostname()]
)
def test_this_machine_is_local(host: str) -> None:
    assert is_local(host)


@pytest.mark.parametrize("host", ["10.1.2.3", "zk-prod-1.example.com", "8.8.8.8"])
def test_other_hosts_are_not_local(host: str) -> None:
    assert not is_local(host)


def test_a_remote_host_is_placed_there_and_this_machine_here(tmp_path: Path) -> None:
    masters, workers = tmp_path / "masters", tmp_path / "workers"
    masters.write_text("10.1.2.3:9091\nlocalhost\n")
    workers.write_text("localhost\nworker-7.example.com\n")
    topology = plan_topology(masters, workers, jobmanagers=1, taskmanagers=1)
    assert topology.jobmanager_hosts == ("10.1.2.3", None)
    assert topology.jobmanager_ports == (9091, None)
    assert topology.taskmanager_hosts == (None, "worker-7.example.com")
    assert topology.remote_hosts == {"10.1.2.3", "worker-7.example.com"}


@pytest.mark.parametrize("line", ["-oProxyCommand=touch", "host;reboot", "a$(id)", "h/x"])
def test_a_line_that_is_no_host_name_is_an_error(tmp_path: Path, line: str) -> None:
    path = tmp_path / "workers"
    path.write_text(f"localhost\n{line}\n")
    with pytest.raises(LocalClusterError, match=f"{path}:2: .* is not a host name or address"):
        read_hosts(path, allow_port=False)


def test_an_empty_hosts_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "masters"
    path.write_text("# nobody yet\n\n")
    with pytest.raises(LocalClusterError, match="lists no host"):
        read_hosts(path, allow_port=True)


def test_files_decide_the_number_of_processes_when_present(tmp_path: Path) -> None:
    masters, workers = tmp_path / "masters", tmp_path / "workers"
    # Without files: the counts given
    assert plan_topology(masters, workers, jobmanagers=2, taskmanagers=3).jobmanager_ports == (
        None,
        None,
    )
    # With files: one process per line, a master's port kept
    masters.write_text("localhost:18081\nlocalhost\nlocalhost\n")
    workers.write_text("localhost\n")
    topology = plan_topology(masters, workers, jobmanagers=1, taskmanagers=5)
    assert topology.jobmanager_ports == (18081, None, None)
    assert topology.taskmanagers == 1
