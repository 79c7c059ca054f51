"""A TaskManager follows a new leader without touching its running attempts (rule 8).

Given an attempt started by one scripted leader, when that leader steps down and another is
granted a newer epoch, then the attempt keeps running and is reported to the new leader
(which adopts it by replying with its epoch), and an outcome the old leader never
acknowledged is sent again to the new one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import open_gate, start_command

from steward.wire.heartbeat import CancelAttempt, HeartbeatReply
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper


def test_a_new_leader_adopts_the_running_attempt(tmp_path: Path, rig: Rig) -> None:
    old = rig.scripted("jm-1")
    manager = rig.taskmanager("tm-1")
    gate = tmp_path / "gate"
    old.command(start_command(rig.blobs, "job-a", old.epoch, args=[str(gate)]))
    running = old.wait_phase("job-a", AttemptPhase.RUNNING)
    assert running.pid is not None
    new = rig.scripted("jm-2", wait=False)

    old.step_down()

    new.wait_granted()
    assert new.epoch > running.epoch
    adopted = new.wait_phase("job-a", AttemptPhase.RUNNING)
    assert (adopted.pid, adopted.epoch) == (running.pid, running.epoch)
    wait_until(lambda: manager.leases.newest_epoch == new.epoch, 10, message="new epoch seen")
    assert pid_alive(running.pid)
    lease = rig.leases("observer").held("job-a")
    assert lease is not None and lease.epoch == running.epoch, "the lease was not touched"

    # A reply of the deposed leader (older epoch) is ignored, commands and all.
    manager.on_reply(
        HeartbeatReply(
            epoch=running.epoch,
            leader="jm-1",
            commands=[CancelAttempt(job_id="job-a", attempt=1, epoch=running.epoch, grace=0)],
        )
    )
    assert pid_alive(running.pid)

    ended = open_gate(new, gate, "job-a")
    assert isinstance(ended.outcome, FinishedEvent)


def test_an_unacknowledged_outcome_is_sent_again_to_the_next_leader(
    tmp_path: Path, rig: Rig
) -> None:
    old = rig.scripted("jm-1")
    old.ack_outcomes = False
    manager = rig.taskmanager("tm-1")
    gate = tmp_path / "gate"
    gate.touch()
    old.command(start_command(rig.blobs, "job-r", old.epoch, args=[str(gate)]))
    lost = old.wait_report(lambda r: r.phase is AttemptPhase.ENDED and r.lease_released, "job-r")
    new = rig.scripted("jm-2", wait=False)
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
