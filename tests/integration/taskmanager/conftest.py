"""Fixtures of the TaskManager tests: a granted leader, TaskManager sessions, their leases.

``leader`` is "jm-1", granted on its own session; ``tm_session(name)`` opens a TaskManager's
session on the same cluster root; ``leases(name)`` is that TaskManager's
:class:`ExecutionLeases`. Everything is closed at the end of the test, and every process group
a test spawned through ``groups`` is killed, so no ``sleep`` outlives its test.

For whole TaskManagers: ``tm_config(**keys)`` is a configuration of this test's cluster (its
own storage and work directories under tmp_path), ``blobs`` its blob storage,
``scripted(name)`` a started :class:`ScriptedLeader`, and ``taskmanager(tm_id, **keys)`` a
started in-process :class:`TaskManager`, stopped after the test; ``rig`` holds those with
``blobs``, ``leases`` and ``tm_session`` (:class:`rig.Rig`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import ScriptedLeader

from steward import config
from steward.config import Configuration
from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.supervisor.process_group import ProcessGroup
from steward.taskmanager.manager import TaskManager
from steward.testing.credentials import internal_token_file
from support import ZK_TEST_ROOT, wait_until

SESSION_TIMEOUT = 6.0
GRANT_TIMEOUT = 10.0


@pytest.fixture
def zk_root(cluster_id: str) -> str:
    return f"{ZK_TEST_ROOT}/{cluster_id}"


@pytest.fixture
def closing() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.fixture
def tm_session(closing: ExitStack, zk_quorum: str, zk_root: str) -> Callable[..., Session]:
    def _open(name: str, session_timeout: float = SESSION_TIMEOUT) -> Session:
        session = Session(zk_quorum, zk_root, session_timeout=session_timeout, name=name)
        session.start()
        closing.callback(session.close)
        return session

    return _open


@pytest.fixture
def elect(
    tm_session: Callable[..., Session], closing: ExitStack
) -> Callable[[str], tuple[LeaderElection, Leadership]]:
    """Start contender ``name`` on a session of its own and return its granted term."""

    def _elect(name: str) -> tuple[LeaderElection, Leadership]:
        election = LeaderElection(tm_session(name), name, f"http://{name}:8081").start()
        closing.callback(election.stop)
        leadership = wait_until(
            lambda: election.leadership, timeout=GRANT_TIMEOUT, message=f"{name} granted"
        )
        assert leadership is not None
        return election, leadership

    return _elect


@pytest.fixture
def leader(elect: Callable[[str], tuple[LeaderElection, Leadership]]) -> Leadership:
    return elect("jm-1")[1]


@pytest.fixture
def leases(tm_session: Callable[..., Session]) -> Callable[..., ExecutionLeases]:
    def _leases(tm_id: str, session: Session | None = None) -> ExecutionLeases:
        return ExecutionLeases(session or tm_session(tm_id), tm_id)

    return _leases


@pytest.fixture
def groups() -> Iterator[list[ProcessGroup]]:
    """Process groups to SIGKILL after the test, whatever it did."""
    spawned: list[ProcessGroup] = []
    yield spawned
    for group in spawned:
        with suppress(Exception):
            group.kill()
            group.wait_gone(10.0)


# ---------------------------------------------------------------- whole TaskManagers

TM_KEYS = {
    "high-availability.zookeeper.session-timeout": "6s",
    "high-availability.zookeeper.connection-timeout": "10s",
    "taskmanager.fence-after": "3s",
    "taskmanager.deadman-timeout": "2s",
    "taskmanager.numberOfTaskSlots": "2",
    "heartbeat.interval": "500ms",
    # Progress on every heartbeat, as these tests were written for; test_paced_progress.py
    # sets its own.
    "heartbeat.progress-interval": "500ms",
}


@pytest.fixture
def tm_keys(zk_quorum: str, cluster_id: str, tmp_path: Path) -> Callable[..., dict[str, str]]:
    """The keys of this test's cluster; keyword arguments override keys by name."""

    def _keys(quorum: str | None = None, **keys: str) -> dict[str, str]:
        return {
            **TM_KEYS,
            "high-availability.zookeeper.quorum": quorum or zk_quorum,
            "high-availability.zookeeper.root": ZK_TEST_ROOT,
            "high-availability.cluster-id": cluster_id,
            "high-availability.storage-dir": f"file://{tmp_path / 'storage'}",
            "taskmanager.workdir": str(tmp_path / "work"),
            **keys,
        }

    return _keys


@pytest.fixture
def tm_config(
    tm_keys: Callable[..., dict[str, str]], tmp_path: Path
) -> Callable[..., Configuration]:
    """A configuration of this test's cluster (:func:`tm_keys`), its file written."""

    def _config(quorum: str | None = None, **keys: str) -> Configuration:
        own = tmp_path / "steward.toml"
        # An explicit file: neither ./steward.toml nor STEWARD_* may leak in. Its one setting
        # (also for the TaskManager processes started with --config it): world-open ZooKeeper
        # state, which the tests' own sessions read (the ACLs are tested with the kit).
        own.write_text('"high-availability.zookeeper.client.acl" = "open"\n')
        # And the cluster's internal credential, which TaskManagers heartbeat with.
        with own.open("a") as toml:
            toml.write(f'"security.internal.token-file" = "{internal_token_file(tmp_path)}"\n')
        return config.load(own, tm_keys(quorum, **keys), environ={})

    return _config


@pytest.fixture
def tm_process(
    tmp_path: Path,
    tm_keys: Callable[..., dict[str, str]],
    tm_config: Callable[..., Configuration],
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """``steward taskmanager --id ID`` as a process of its own, with this test's keys (keyword
    arguments override them by name), its output in ``ID.log``; killed after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def _start(tm_id: str, **keys: str) -> subprocess.Popen[bytes]:
        tm_config(**keys)  # its file, which the process reads with --config
        argv = [sys.executable, "-m", "steward.cli", "--config", str(tmp_path / "steward.toml")]
        for key, value in tm_keys(**keys).items():
            argv += ["-D", f"{key}={value}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
        with (tmp_path / f"{tm_id}.log").open("ab") as log:
            process = subprocess.Popen(
                [*argv, "taskmanager", "--id", tm_id],
                cwd=tmp_path,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        started.append(process)
        return process

    yield _start
    for process in started:
        with suppress(ProcessLookupError):
            process.kill()
        process.wait(timeout=10)


@pytest.fixture
def blobs(tm_config: Callable[..., Configuration]) -> BlobStore:
    return BlobStore(tm_config().settings.storage.storage_dir)


@pytest.fixture
def scripted(
    tm_session: Callable[..., Session], closing: ExitStack
) -> Callable[..., ScriptedLeader]:
    def _start(name: str = "jm-scripted", *, wait: bool = True) -> ScriptedLeader:
        leader = ScriptedLeader(tm_session(name), name)
        closing.callback(leader.close)
        return leader.start() if wait else leader.contend()

    return _start


@pytest.fixture
def taskmanager(
    tm_config: Callable[..., Configuration], closing: ExitStack
) -> Callable[..., TaskManager]:
    def _start(tm_id: str = "tm-1", **keys: str) -> TaskManager:
        manager = TaskManager(tm_config(**keys), tm_id)
        manager.start()
        closing.callback(manager.stop, 1.0)
        return manager

    return _start


@pytest.fixture
def rig(
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
    leases: Callable[..., ExecutionLeases],
    tm_session: Callable[..., Session],
) -> Rig:
    return Rig(scripted, taskmanager, blobs, leases, tm_session)
