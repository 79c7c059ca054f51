"""A TaskManager follows a new leader without touching its running attempts (rule 8).

Given an attempt started by one scripted leader, when that leader steps down and another is
granted a newer epoch, then the attempt keeps running and is reported to the new leader
(which adopts it by replying with its epoch), and an outcome the old leader never
acknowledged is sent again to the new one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from scripted_leader import ScriptedLeader, open_gate, start_command

from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import CancelAttempt, HeartbeatReply
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_new_leader_adopts_the_running_attempt(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
    leases: Callable[..., ExecutionLeases],
) -> None:
    old = scripted("jm-1")
    manager = taskmanager("tm-1")
    gate = tmp_path / "gate"
    old.command(start_command(blobs, "job-a", old.epoch, args=[str(gate)]))
    running = old.wait_phase("job-a", AttemptPhase.RUNNING)
    assert running.pid is not None
    new = scripted("jm-2", wait=False)

    old.step_down()

    new.wait_granted()
    assert new.epoch > running.epoch
    adopted = new.wait_phase("job-a", AttemptPhase.RUNNING)
    assert (adopted.pid, adopted.epoch) == (running.pid, running.epoch)
    wait_until(lambda: manager.leases.newest_epoch == new.epoch, 10, message="new epoch seen")
    assert alive(running.pid)
    lease = leases("observer").held("job-a")
    assert lease is not None and lease.epoch == running.epoch, "the lease was not touched"

    # A reply of the deposed leader (older epoch) is ignored, commands and all.
    manager.on_reply(
        HeartbeatReply(
            epoch=running.epoch,
            leader="jm-1",
            commands=[CancelAttempt(job_id="job-a", attempt=1, epoch=running.epoch, grace=0)],
        )
    )
    assert alive(running.pid)

    ended = open_gate(new, gate, "job-a")
    assert isinstance(ended.outcome, FinishedEvent)


def test_an_unacknowledged_outcome_is_sent_again_to_the_next_leader(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
) -> None:
    old = scripted("jm-1")
    old.ack_outcomes = False
    manager = taskmanager("tm-1")
    gate = tmp_path / "gate"
    gate.touch()
    old.command(start_command(blobs, "job-r", old.epoch, args=[str(gate)]))
    lost = old.wait_report(lambda r: r.phase is AttemptPhase.ENDED and r.lease_released, "job-r")
    new = scripted("jm-2", wait=False)
    new.ack_outcomes = False

    old.step_down()

    new.wait_granted()
    resent = new.wait_phase("job-r", AttemptPhase.ENDED)
    assert resent.outcome == lost.outcome
    assert isinstance(resent.outcome, FinishedEvent)
    seen = len(new.heartbeats)
    new.ack_outcomes = True
    wait_until(lambda: new.forgotten("job-r", seen + 1), 10, message="forgotten after the ack")
    assert manager.attempts.get("job-r", 1) is None
