"""The .steward state: cluster.json round trip, the user's settings, and steward.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.cluster.settings import UserSettings, cluster_settings, write_toml
from steward.cluster.workdir import (
    ClusterState,
    ProcessEntry,
    Role,
    StateDir,
    load_state,
    save_state,
)
from steward.config import load
from steward.errors import LocalClusterError

QUORUM = "high-availability.zookeeper.quorum"
SESSION_TIMEOUT = "high-availability.zookeeper.session-timeout"


def test_cluster_state_round_trips(tmp_path: Path) -> None:
    state_dir = StateDir.of(tmp_path)
    state = ClusterState(
        cluster_id="local-1",
        quorum="127.0.0.1:2181",
        managed_zookeeper=True,
        config=str(state_dir.config),
        started_at=1.5,
        processes=[
            ProcessEntry(
                role=Role.JOBMANAGER,
                id="jm-1",
                pid=42,
                create_time=1000.25,
                marker=str(state_dir.config),
                address="http://127.0.0.1:18081",
                log=str(state_dir.log(Role.JOBMANAGER, 1)),
            )
        ],
    )
    assert load_state(state_dir) is None
    save_state(state_dir, state)
    assert load_state(state_dir) == state
    assert state.jobmanager_addresses == ["http://127.0.0.1:18081"]
    assert state_dir.log(Role.TASKMANAGER, 2) == tmp_path / ".steward/logs/taskmanager-2.log"


def test_a_corrupt_cluster_json_is_a_clear_error(tmp_path: Path) -> None:
    state_dir = StateDir.of(tmp_path)
    state_dir.root.mkdir()
    state_dir.cluster_json.write_text('{"schema": 1, "cluster_id": 3}')
    with pytest.raises(LocalClusterError, match=r"cluster\.json is not a valid local cluster"):
        load_state(state_dir)


def test_user_settings_come_from_their_file_and_dash_d_not_from_dot_steward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ./steward.toml, and a .steward/steward.toml of an earlier start
    monkeypatch.chdir(tmp_path)
    (tmp_path / "steward.toml").write_text(f'"{SESSION_TIMEOUT}" = "4s"\n')
    (tmp_path / ".steward").mkdir()
    (tmp_path / ".steward" / "steward.toml").write_text(f'"{QUORUM}" = "127.0.0.1:9"\n')
    # When collecting the user's settings with a -D
    user = UserSettings.collect(None, {"heartbeat.interval": "200ms"}, environ={})
    # Then the file and the -D count, the cluster's own file does not
    assert dict(user.raw) == {SESSION_TIMEOUT: "4s", "heartbeat.interval": "200ms"}
    assert user.configured(QUORUM) is None
    # And an environment variable counts as configured
    env = UserSettings.collect(
        None, {}, environ={"STEWARD_HIGH_AVAILABILITY_ZOOKEEPER_QUORUM": "zk:1"}
    )
    assert env.configured(QUORUM) == "zk:1"


def test_written_settings_load_back_as_the_processes_will_read_them(tmp_path: Path) -> None:
    # Given the user's settings of several TOML types
    user = UserSettings(
        {SESSION_TIMEOUT: 4000, "jobmanager.cancel-grace": "3s", "heartbeat.interval": "250ms"},
        environ={},
    )
    settings = cluster_settings(
        user,
        state_root=tmp_path / ".steward",
        quorum="127.0.0.1:15000",
        cluster_id="local-a",
        slots=3,
    )
    # When written and read back
    path = tmp_path / ".steward" / "steward.toml"
    write_toml(path, settings, header="test header\nsecond line")
    config = load(path, environ={})
    # Then every value means what the user wrote, and the cluster's own keys are set
    assert (
        config.settings.zookeeper.session_timeout == 4.0
    )  # a bare TOML integer is still milliseconds
    assert config["jobmanager.cancel-grace"] == 3.0
    assert config.settings.zookeeper.quorum == "127.0.0.1:15000"
    assert config.settings.zookeeper.cluster_id == "local-a"
    assert config.settings.taskmanager.slots == 3
    assert config.settings.storage.storage_dir == f"file://{tmp_path / '.steward' / 'storage'}"
    assert config["taskmanager.workdir"] == str(tmp_path / ".steward" / "work")
    assert path.read_text().startswith("# test header\n# second line\n")


def test_a_users_storage_dir_wins_over_the_local_default(tmp_path: Path) -> None:
    user = UserSettings({"high-availability.storage-dir": "s3://bucket/steward"}, environ={})
    settings = cluster_settings(
        user, state_root=tmp_path, quorum="127.0.0.1:1", cluster_id="c", slots=None
    )
    assert settings["high-availability.storage-dir"] == "s3://bucket/steward"
    assert settings["taskmanager.numberOfTaskSlots"] == 2
