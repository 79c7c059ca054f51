"""``steward cluster`` mistakes and reports that need no ZooKeeper: one-line errors, exit codes,
and the status document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from recorded import CLUSTER_ID, record_cluster, spawn_sleeper

from steward.cluster.launcher import live_process
from steward.cluster.workdir import ProcessEntry, Role
from unit.steward_cli import run_steward


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("STEWARD_CONFIG", "STEWARD_HIGH_AVAILABILITY_ZOOKEEPER_QUORUM"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[ProcessEntry]:
    """A cluster.json (no managed ZooKeeper) whose one JobManager is a live `sleep`."""
    child, entry = spawn_sleeper(
        tmp_path, "271828", Role.JOBMANAGER, "jm-1", address="http://127.0.0.1:9"
    )
    record_cluster(tmp_path, entry)
    try:
        yield entry
    finally:
        child.kill()
        child.wait()


def test_status_without_a_cluster_says_so_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = run_steward(monkeypatch, capsys, "cluster", "status")
    assert code == 1
    assert "no local cluster was started in" in out
    code, out, _err = run_steward(monkeypatch, capsys, "cluster", "status", "--json")
    assert (code, json.loads(out)["started"]) == (1, False)


def test_status_json_lists_every_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], running: ProcessEntry
) -> None:
    code, out, _err = run_steward(monkeypatch, capsys, "cluster", "status", "--json")
    document = json.loads(out)
    assert code == 0
    assert document["cluster_id"] == CLUSTER_ID
    assert document["leader"] is None  # nothing answers on port 9
    (process,) = document["processes"]
    assert {k: process[k] for k in ("role", "id", "pid", "alive")} == {
        "role": "jobmanager",
        "id": "jm-1",
        "pid": running.pid,
        "alive": True,
    }


def test_start_while_running_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], running: ProcessEntry
) -> None:
    code, out, err = run_steward(monkeypatch, capsys, "cluster", "start")
    assert code == 2
    assert err.startswith("error: the local cluster in ")
    assert f"is running: jm-1 (pid {running.pid})" in err
    assert len(err.strip().splitlines()) == 1
    assert out == ""


def test_a_remote_worker_without_a_shared_zookeeper_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / ".steward").mkdir()
    (tmp_path / ".steward" / "workers").write_text("localhost\nnode-9.example.com\n")
    code, _out, err = run_steward(monkeypatch, capsys, "cluster", "start")
    assert code == 2
    assert "name other hosts (node-9.example.com)" in err
    assert "set high-availability.zookeeper.quorum" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / ".steward" / "cluster.json").exists()
    code, _out, err = run_steward(
        monkeypatch,
        capsys,
        "-D",
        "high-availability.zookeeper.quorum=127.0.0.1:2181",
        "cluster",
        "start",
    )
    assert code == 2
    assert "names 127.0.0.1:2181, which the other hosts (node-9.example.com) cannot reach" in err
    assert not (tmp_path / ".steward" / "cluster.json").exists()


def test_a_bad_dash_d_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _out, err = run_steward(monkeypatch, capsys, "cluster", "start", "-D", "no.such=1")
    assert code == 2
    assert "unknown configuration key 'no.such'" in err
    assert not (tmp_path / ".steward").exists()


def test_stop_without_a_cluster_is_harmless(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = run_steward(monkeypatch, capsys, "cluster", "stop", "--json")
    assert (code, json.loads(out)) == (0, {"stopped": [], "purged": False})


def test_stop_signals_the_recorded_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], running: ProcessEntry
) -> None:
    code, out, _err = run_steward(monkeypatch, capsys, "cluster", "stop")
    assert (code, out.strip()) == (0, "stopped jm-1")
    assert live_process(running) is None
