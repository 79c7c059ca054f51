"""Ended attempts' folders leave the TaskManager's disk (taskmanager.workdir.retention).

Given a real ZooKeeper, a ScriptedLeader and an in-process TaskManager running real runners:
an attempt's folder goes only once its outcome is acknowledged and the retention has passed,
a running attempt's folder stays, and a restarted TaskManager removes what its earlier run
left once it is older than the retention.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import run_gated, start_command

from steward.config import Configuration
from steward.taskmanager.manager import TaskManager
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

RETENTION = "taskmanager.workdir.retention"


def attempt_dir(tmp_path: Path, tm_id: str, job_id: str, attempt: int = 1) -> Path:
    return tmp_path / "work" / tm_id / job_id / str(attempt)


def test_with_retention_zero_an_ended_folder_goes_once_acknowledged_a_running_one_stays(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    leader.ack_outcomes = False
    manager = rig.taskmanager("tm-1", **{RETENTION: "0"})
    running_gate = tmp_path / "gate-running"
    leader.command(start_command(rig.blobs, "job-run", leader.epoch, args=[str(running_gate)]))
    leader.wait_phase("job-run", AttemptPhase.RUNNING)
    ended, running = (
        attempt_dir(tmp_path, "tm-1", "job-end"),
        attempt_dir(tmp_path, "tm-1", "job-run"),
    )

    assert run_gated(leader, rig.blobs, tmp_path, "job-end").phase is AttemptPhase.ENDED
    leader.wait_report(lambda r: r.lease_released, "job-end")
    # Ended, its group gone, its lease released, but the leader has not acknowledged it: a
    # few more heartbeats (each a chance for the cleaner) and it is still there.
    seen = len(leader.heartbeats)
    wait_until(lambda: len(leader.heartbeats) >= seen + 3, 20, message="three heartbeats")
    assert (ended / "runner.log").exists()
    assert manager.attempts.get("job-end", 1) is not None

    leader.ack_outcomes = True

    # The attempt's folder goes, then its job's folder, now empty (right after, on the
    # cleaner's thread).
    wait_until(lambda: not ended.parent.exists(), 20, message="ended attempt's folders removed")
    assert (running / "runner.log").exists(), "the running attempt's folder stays"
    assert (running / "artifact").is_dir()
    running_gate.touch()
    wait_until(lambda: not running.exists(), 20, message="and goes once it ended too")


def test_with_a_long_retention_an_acknowledged_attempts_folder_stays(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1", **{RETENTION: "1h"})
    folder = attempt_dir(tmp_path, "tm-1", "job-a")

    run_gated(leader, rig.blobs, tmp_path, "job-a")
    wait_until(lambda: manager.attempts.get("job-a", 1) is None, 20, message="forgotten")

    # Its scratch goes at once (steward.taskmanager.scratch); the folder an hour from now.
    # (The scratch leaves the cleaner's list as its removal begins, not when it ends.)
    wait_until(
        lambda: manager.cleaner.pending() == [folder] and not (folder / "tmp").exists(),
        10,
        message="the scratch removed, only the folder due",
    )
    assert (folder / "runner.log").exists()


def test_a_restarted_taskmanager_removes_its_earlier_runs_folders_past_retention(
    tmp_path: Path, tm_config: Callable[..., Configuration], rig: Rig
) -> None:
    leader = rig.scripted()
    first = TaskManager(tm_config(**{RETENTION: "10m"}), "tm-r").start()
    try:
        run_gated(leader, rig.blobs, tmp_path, "job-old")
        run_gated(leader, rig.blobs, tmp_path, "job-recent")
        wait_until(lambda: not first.attempts.all(), 20, message="both forgotten")
    finally:
        first.stop()
    old, recent = (
        attempt_dir(tmp_path, "tm-r", "job-old"),
        attempt_dir(tmp_path, "tm-r", "job-recent"),
    )
    assert old.exists() and recent.exists(), "10 minutes had not passed"
    twenty_minutes_ago = time.time() - 1200
    for path in (old, *old.iterdir()):
        os.utime(path, (twenty_minutes_ago, twenty_minutes_ago))

    second = rig.taskmanager("tm-r", **{RETENTION: "10m"})

    # The attempt's folder goes first, then its job's folder, now empty.
    wait_until(lambda: not old.parent.exists(), 20, message="the old folders removed")
    assert (recent / "runner.log").exists(), "the recent one waits for its ten minutes"
    # (A scratch the first run left goes at once, in the same pass or the next.)
    wait_until(lambda: second.cleaner.pending() == [recent], 20, message="only recent due")


# A process that is not the attempt's (an operator's shell, a tool) working in its folder: the
# attempt's own processes cannot outlive it (containment, docs/architecture.md "Attempts").
WORKS_THERE = "import time\nwhile True: time.sleep(1)"


def test_a_folder_another_process_still_works_in_is_kept_until_it_is_gone(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1", **{RETENTION: "0"})
    gate = tmp_path / "gate"
    folder = attempt_dir(tmp_path, "tm-1", "job-leak")
    leader.command(start_command(rig.blobs, "job-leak", leader.epoch, args=[str(gate)]))
    leader.wait_report(lambda r: r.progress is not None, "job-leak", timeout=30)
    other = subprocess.Popen([sys.executable, "-c", WORKS_THERE], cwd=folder)
    try:
        gate.touch()
        wait_until(lambda: manager.attempts.get("job-leak", 1) is None, 30, message="forgotten")
        # The scratch, where no process works, goes; the folder waits for the process.
        wait_until(lambda: manager.cleaner.pending() == [folder], 10, message="the folder due")
        seen = len(leader.heartbeats)
        wait_until(lambda: len(leader.heartbeats) >= seen + 3, 20, message="three heartbeats")
        assert folder.exists(), "a process still works there"
    finally:
        other.kill()
        other.wait(timeout=10)

    wait_until(lambda: not folder.exists(), 20, message="removed once the process is gone")
