"""Every process of an attempt is gone before its lease is released (rule 3), even one
that left the runner's process group and session.

The pipeline (tests/escapers.py) starts ``sleep 1000`` through a double fork with ``setsid``,
as a daemon does, and reports its pid. Then the attempt ends normally, is cancelled, loses its
runner to SIGKILL, fences itself, or loses its TaskManager to SIGKILL; in each case the sleeper
must die, and (while the TaskManager lives) the lease must not be released, nor the attempt
reported ENDED, before it is gone. The in-process cases run with a cgroup per attempt and with
the fallback (process group, environment token).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ha_harness import expire_session
from scripted_leader import ScriptedLeader, start_command

from escapers import ESCAPER, escaped_from, kill_sleepers
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import CancelAttempt
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper

JOB = "job-esc"
DEADMAN_TIMEOUT = 2.0
MARGIN = 15.0


@pytest.fixture
def escaped_pids() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    kill_sleepers(pids)


@dataclass
class Rig:
    """A scripted leader and an in-process TaskManager, and what the test saw escape."""

    tmp_path: Path
    leader: ScriptedLeader
    manager: TaskManager
    observer: ExecutionLeases
    blobs: BlobStore
    escaped_pids: list[int]

    def start_escaper(self, gate: Path) -> tuple[int, int]:
        return start_escaper(self.tmp_path, self.leader, self.blobs, self.escaped_pids, gate)


@pytest.fixture
def rig(
    tmp_path: Path,
    *,
    containment_mode: str,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
    leases: Callable[..., ExecutionLeases],
    escaped_pids: list[int],
) -> Rig:
    leader = scripted()
    manager = taskmanager("tm-1")
    return Rig(tmp_path, leader, manager, leases("observer"), blobs, escaped_pids)


def start_escaper(
    tmp_path: Path, leader: ScriptedLeader, blobs: BlobStore, escaped_pids: list[int], gate: Path
) -> tuple[int, int]:
    """Start the escaping pipeline; (runner pid, escaped sleeper pid) once the sleeper runs."""
    args = [str(tmp_path / "escaped.pid"), str(gate)]
    leader.command(start_command(blobs, JOB, leader.epoch, args=args, source=ESCAPER))
    report = leader.wait_report(lambda r: r.progress is not None, JOB, timeout=30)
    assert report.progress is not None
    runner, escaped = int(str(report.progress["runner"])), int(str(report.progress["escaped"]))
    escaped_pids.append(escaped)
    assert escaped_from(escaped, runner) and pid_alive(escaped)
    return runner, escaped


def assert_gone_before_release(
    leader: ScriptedLeader, observer: ExecutionLeases, escaped: int
) -> FailedEvent | FinishedEvent:
    """Wait for the ENDED report and the lease's release: the sleeper is dead at both."""

    def ended() -> tuple[bool, FailedEvent | FinishedEvent] | None:
        report = leader.latest(JOB)
        if report is None or report.phase is not AttemptPhase.ENDED:
            return None
        assert report.outcome is not None
        return (pid_alive(escaped), report.outcome)

    def released() -> tuple[bool] | None:
        return None if observer.held(JOB) is not None else (pid_alive(escaped),)

    alive_at_end, outcome = wait_until(ended, 30, message="attempt ENDED")
    assert not alive_at_end, "reported ENDED while a process of the attempt lives"
    (alive_at_release,) = wait_until(released, 30, message="lease released")
    assert not alive_at_release, "lease released while a process of the attempt lives"
    return outcome


def test_an_attempt_that_ends_takes_its_daemonised_process_with_it(rig: Rig) -> None:
    gate = rig.tmp_path / "gate"
    _runner, escaped = rig.start_escaper(gate)

    gate.touch()

    outcome = assert_gone_before_release(rig.leader, rig.observer, escaped)
    assert isinstance(outcome, FinishedEvent)


def test_a_cancelled_attempt_takes_its_daemonised_process_with_it(rig: Rig) -> None:
    _runner, escaped = rig.start_escaper(rig.tmp_path / "never")

    rig.leader.command(CancelAttempt(job_id=JOB, attempt=1, epoch=rig.leader.epoch, grace=5.0))

    outcome = assert_gone_before_release(rig.leader, rig.observer, escaped)
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.wire.runner_protocol.AttemptCancelled"


def test_a_sigkilled_runner_leaves_nothing_behind_its_lease(rig: Rig) -> None:
    runner, escaped = rig.start_escaper(rig.tmp_path / "never")

    os.kill(runner, signal.SIGKILL)

    outcome = assert_gone_before_release(rig.leader, rig.observer, escaped)
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.AttemptLost"


def test_self_fencing_kills_a_daemonised_process_of_the_attempt(rig: Rig) -> None:
    _runner, escaped = rig.start_escaper(rig.tmp_path / "never")

    expire_session(rig.manager.session)

    report = rig.leader.wait_phase(JOB, AttemptPhase.ENDED, timeout=30)
    assert not pid_alive(escaped), "reported ENDED while a process of the attempt lives"
    assert isinstance(report.outcome, FailedEvent)


# ---------------------------------------------------------------- a SIGKILLed TaskManager


def test_a_sigkilled_taskmanager_leaves_no_process_of_its_attempt(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    tm_process: Callable[[str], subprocess.Popen[bytes]],
    tm_session: Callable[..., Session],
    blobs: BlobStore,
) -> None:
    leader = scripted()
    observer = tm_session("observer")
    process = tm_process("tm-kill", **{"taskmanager.deadman-timeout": f"{DEADMAN_TIMEOUT:g}s"})
    path = observer.layout.taskmanager("tm-kill")
    wait_until(lambda: observer.client.exists(path), 30, message="tm-kill registered")
    escaped_pids: list[int] = []
    try:
        runner, escaped = start_escaper(tmp_path, leader, blobs, escaped_pids, tmp_path / "x")

        process.send_signal(signal.SIGKILL)

        wait_until(lambda: not pid_alive(runner), DEADMAN_TIMEOUT + MARGIN, message="runner gone")
        wait_until(lambda: not pid_alive(escaped), MARGIN, message="escaped sleeper gone")
    finally:
        kill_sleepers(escaped_pids)
