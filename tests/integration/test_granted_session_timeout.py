"""The session timeout ZooKeeper grants, against a real server whose maxSessionTimeout is 4 s.

A server bounds every session's timeout by its ``minSessionTimeout`` and ``maxSessionTimeout``
whatever the client asks for. Given a configured 10 s session (fence-after 6 s, dead-man 6 s)
and a server that grants at most 4 s, the chain no longer holds: a TaskManager's attempts
could run 7.5 s past its last round trip, its leases are gone after 4 s. The session reads
the granted timeout after connecting, and a JobManager or TaskManager refuses to start,
naming the keys and the server's maxSessionTimeout; a granted timeout that keeps the chain
intact is accepted (with a warning when it differs from the configured one).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.config import Configuration, load
from steward.errors import ConfigurationError
from steward.ha.session import Session
from steward.taskmanager.manager import TaskManager
from steward.testing.credentials import internal_token_file
from steward.zookeeper import layout
from steward.zookeeper.managed import ManagedEnsemble
from support import ZK_TEST_ROOT, free_zookeeper_port

pytestmark = pytest.mark.zookeeper

MAX_SESSION_MS = 4000


@pytest.fixture(scope="module")
def capped_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedEnsemble]:
    """A standalone ZooKeeper of this module that grants sessions of at most 4 s."""
    saved = dict(layout.SERVER_SETTINGS)
    layout.SERVER_SETTINGS["maxSessionTimeout"] = str(MAX_SESSION_MS)
    ensemble = ManagedEnsemble(tmp_path_factory.mktemp("capped-zookeeper"))
    try:
        ensemble.start(1, free_zookeeper_port(1), timeout=60.0)
    finally:
        layout.SERVER_SETTINGS.clear()
        layout.SERVER_SETTINGS.update(saved)
    try:
        yield ensemble
    finally:
        ensemble.stop()


def config(quorum: str, cluster_id: str, tmp_path: Path, **keys: str) -> Configuration:
    values = {
        "high-availability.zookeeper.quorum": quorum,
        "high-availability.zookeeper.root": ZK_TEST_ROOT,
        "high-availability.cluster-id": cluster_id,
        "high-availability.storage-dir": f"file://{tmp_path / 'storage'}",
        "taskmanager.workdir": str(tmp_path / "work"),
        "security.internal.token-file": str(internal_token_file(tmp_path)),
        **keys,
    }
    return load(config_file=tmp_path / "steward.toml", environ={}, overrides=values)


@pytest.fixture(autouse=True)
def _empty_config_file(tmp_path: Path) -> None:
    # World-open ZooKeeper state: the tests' own sessions look at it.
    (tmp_path / "steward.toml").write_text('"high-availability.zookeeper.client.acl" = "open"\n')


def test_the_granted_session_timeout_is_read_after_connecting(
    capped_zookeeper: ManagedEnsemble, cluster_id: str
) -> None:
    session = Session(
        capped_zookeeper.connect_string, f"{ZK_TEST_ROOT}/{cluster_id}", session_timeout=10.0
    )
    assert session.granted_session_timeout is None
    with session:
        assert session.granted_session_timeout == MAX_SESSION_MS / 1000


def test_a_granted_timeout_that_breaks_the_chain_refuses_the_session_naming_the_keys(
    capped_zookeeper: ManagedEnsemble, cluster_id: str, tmp_path: Path
) -> None:
    cfg = config(capped_zookeeper.connect_string, cluster_id, tmp_path)
    assert (
        cfg.settings.zookeeper.session_timeout == 10.0
    )  # accepted as configured: the chain holds for 10 s
    session = Session.from_config(cfg, name="jm-short")

    with pytest.raises(ConfigurationError) as raised:
        session.start()

    message = str(raised.value)
    assert "granted a session timeout of 4s" in message
    assert "high-availability.zookeeper.session-timeout asks for 10s" in message
    assert "maxSessionTimeout" in message
    assert "taskmanager.fence-after" in message and "jobmanager.fence-after" in message
    assert not session.connected


def test_a_granted_timeout_that_keeps_the_chain_is_accepted_with_a_warning(
    capped_zookeeper: ManagedEnsemble,
    cluster_id: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # fence-after 2 s, dead-man 1.5 s: max(2, 1.5 + 0.5) + 0.4 <= 4 for the JobManager too
    cfg = config(
        capped_zookeeper.connect_string,
        cluster_id,
        tmp_path,
        **{"taskmanager.fence-after": "2s", "taskmanager.deadman-timeout": "1500ms"},
    )
    caplog.set_level(logging.WARNING, logger="steward.ha.session")
    with Session.from_config(cfg, name="jm-fits") as session:
        assert session.connected and session.granted_session_timeout == 4.0
    assert "granted=4s configured=10s" in caplog.text


def test_a_taskmanager_refuses_to_start_on_a_too_short_granted_session(
    capped_zookeeper: ManagedEnsemble, cluster_id: str, tmp_path: Path
) -> None:
    cfg = config(capped_zookeeper.connect_string, cluster_id, tmp_path)
    manager = TaskManager(cfg, "tm-short")

    with pytest.raises(ConfigurationError, match="maxSessionTimeout"):
        manager.start()

    with Session(
        capped_zookeeper.connect_string, cfg.settings.zookeeper.cluster_root, session_timeout=4
    ) as s:
        assert s.client.exists(s.layout.taskmanager("tm-short")) is None


def test_the_taskmanager_command_exits_with_the_reason(
    capped_zookeeper: ManagedEnsemble, cluster_id: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    keys = {
        "high-availability.zookeeper.quorum": capped_zookeeper.connect_string,
        "high-availability.zookeeper.root": ZK_TEST_ROOT,
        "high-availability.cluster-id": cluster_id,
        "high-availability.storage-dir": f"file://{tmp_path / 'storage'}",
        "taskmanager.workdir": str(tmp_path / "work"),
        "high-availability.zookeeper.session-timeout": "60s",
        "security.internal.token-file": str(internal_token_file(tmp_path)),
    }
    overrides = [arg for key, value in keys.items() for arg in ("-D", f"{key}={value}")]
    command = [sys.executable, "-m", "steward.cli", "--config", str(tmp_path / "steward.toml")]
    done = subprocess.run(
        [*command, *overrides, "taskmanager", "--id", "tm-cli"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "granted a session timeout of 4s" in done.stderr
    assert "asks for 60s" in done.stderr and "maxSessionTimeout" in done.stderr


def test_a_servers_tick_that_leaves_the_chain_no_room_refuses_the_session(
    zk_quorum: str, cluster_id: str, tmp_path: Path
) -> None:
    # 3.1 s + one probe period (0.3875 s) + 0.4 s <= 4 s: the chain holds as configured, but
    # the leader may hear of a round trip through a follower tickTime/2 (0.25 s) late.
    cfg = config(
        zk_quorum,
        cluster_id,
        tmp_path,
        **{
            "high-availability.zookeeper.session-timeout": "4s",
            "taskmanager.fence-after": "3100ms",
            "jobmanager.replacement-grace": "0s",
        },
    )
    assert cfg.settings.timing.problems() == []
    session = Session.from_config(cfg, name="tm-slow-tick")

    with pytest.raises(ConfigurationError) as raised:
        session.start()

    message = str(raised.value)
    assert "the ZooKeeper servers tick every 0.5s" in message
    assert "taskmanager.fence-after (3.1s)" in message and "jobmanager.fence-after" in message
    assert not session.connected
