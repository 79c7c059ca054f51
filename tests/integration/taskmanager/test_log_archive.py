"""Ended attempts' logs reach the HA storage from their TaskManager (issue 25, part 1).

Given a real ZooKeeper, a ScriptedLeader and an in-process TaskManager running real runners:
an attempt's whole log is in the archive once it ended, its outcome reported without waiting
for it; with the storage unmounted (its folder renamed, as a share that went away) the copy is
retried, the attempt's folder stays even with a zero retention, and the log arrives once the
storage is back, after which the folder goes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import open_gate, run_gated, start_command

from steward.store.blob import BlobStore
from steward.store.log_archive import LogArchive
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper


def archived(blobs: BlobStore, job_id: str) -> bytes | None:
    opened = LogArchive(blobs).open(job_id, 1)
    if opened is None:
        return None
    with opened:
        return opened.read()


def test_an_ended_attempts_whole_log_is_archived(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    rig.taskmanager("tm-1")
    run_gated(leader, rig.blobs, tmp_path, "job-a")
    local = tmp_path / "work" / "tm-1" / "job-a" / "1" / "runner.log"

    copy = wait_until(lambda: archived(rig.blobs, "job-a"), 20, message="the log archived")

    assert copy == local.read_bytes()
    assert b"job-a" in copy  # the runner's own lines name the job


def test_an_archive_failure_is_retried_and_the_log_kept_until_storage_is_back(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1", **{"taskmanager.workdir.retention": "0"})
    gate = tmp_path / "gate"
    leader.command(start_command(rig.blobs, "job-b", leader.epoch, args=[str(gate)]))
    leader.wait_phase("job-b", AttemptPhase.RUNNING)
    storage = tmp_path / "storage"  # the tm_config fixture's high-availability.storage-dir
    away = storage.with_name("storage-unmounted")
    storage.rename(away)
    folder = tmp_path / "work" / "tm-1" / "job-b" / "1"

    open_gate(leader, gate, "job-b")  # the end report did not wait for it
    registry = manager.metrics.registry

    def failures() -> float:
        found = registry.get_sample_value("steward_taskmanager_attempt_log_archive_failures_total")
        return found or 0.0

    wait_until(lambda: failures() >= 2, 30, message="the archive retried")
    wait_until(lambda: manager.attempts.get("job-b", 1) is None, 20, message="acknowledged")
    assert (folder / "runner.log").exists(), "kept: the archive does not have it yet"
    assert not storage.exists(), "the absent storage was not recreated"
    local = (folder / "runner.log").read_bytes()

    away.rename(storage)

    copy = wait_until(lambda: archived(rig.blobs, "job-b"), 60, message="archived once back")
    assert copy == local
    wait_until(lambda: not folder.exists(), 20, message="then the folder goes")
