"""``steward taskmanager`` as a real process: a graceful stop, and a SIGKILL.

Given a TaskManager process running an attempt for a scripted leader: SIGTERM stops it
gracefully (the attempt is cancelled, its lease released and the TaskManager deregistered at
once, exit code 0); SIGKILL leaves the runner to its dead-man's switch (it dies within
deadman-timeout) and the lease to the session (it vanishes with it).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import ScriptedLeader, start_command

from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper

# The timing chain needs 4.03 s with fence-after 3 s and the servers' 0.5 s tick.
SESSION_TIMEOUT = 5.0
DEADMAN_TIMEOUT = 2.0


def registered(session: Session, tm_id: str) -> bool:
    return session.client.exists(session.layout.taskmanager(tm_id)) is not None


def start_attempt(
    tmp_path: Path, leader: ScriptedLeader, blobs: BlobStore, observer: Session, tm_id: str
) -> int:
    wait_until(lambda: registered(observer, tm_id), 30, message=f"{tm_id} registered")
    leader.command(start_command(blobs, "job-p", leader.epoch, args=[str(tmp_path / "never")]))
    report = leader.wait_report(lambda r: r.progress is not None, "job-p", timeout=30)
    assert report.pid is not None and pid_alive(report.pid)
    return report.pid


def test_sigterm_stops_gracefully(
    tmp_path: Path, tm_process: Callable[..., subprocess.Popen[bytes]], rig: Rig
) -> None:
    leader = rig.scripted()
    observer = rig.session("observer")
    process = tm_process("tm-term", **{"high-availability.zookeeper.session-timeout": "20s"})
    runner = start_attempt(tmp_path, leader, rig.blobs, observer, "tm-term")
    stopped = time.monotonic()

    process.send_signal(signal.SIGTERM)

    assert process.wait(timeout=15) == 0, (tmp_path / "tm-term.log").read_text()
    # Well within the 20 s session timeout: released and deregistered, not expired.
    assert time.monotonic() - stopped < 10
    assert not pid_alive(runner)
    assert ExecutionLeases(observer, "reader").held("job-p") is None
    assert not registered(observer, "tm-term")
    assert "taskmanager stopped" in (tmp_path / "tm-term.log").read_text()


def test_sigkill_leaves_the_runner_to_its_deadman_switch_and_the_lease_to_the_session(
    tmp_path: Path, tm_process: Callable[..., subprocess.Popen[bytes]], rig: Rig
) -> None:
    leader = rig.scripted()
    observer = rig.session("observer")
    process = tm_process(
        "tm-kill",
        **{
            "high-availability.zookeeper.session-timeout": f"{SESSION_TIMEOUT:g}s",
            "taskmanager.deadman-timeout": f"{DEADMAN_TIMEOUT:g}s",
        },
    )
    runner = start_attempt(tmp_path, leader, rig.blobs, observer, "tm-kill")
    reader = ExecutionLeases(observer, "reader")
    assert reader.held("job-p") is not None

    killed = time.monotonic()
    process.send_signal(signal.SIGKILL)

    wait_until(lambda: not pid_alive(runner), DEADMAN_TIMEOUT + 1.0, message="runner gone")
    wait_until(lambda: reader.held("job-p") is None, SESSION_TIMEOUT + 5.0, message="lease gone")
    assert time.monotonic() - killed >= SESSION_TIMEOUT * 0.5, "the lease went with the session"
    assert not registered(observer, "tm-kill")
