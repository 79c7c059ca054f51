"""A real TaskManager's unchanged heartbeats (issue 22): its idle reports sent once per leader.

Given a leader that keeps the reports it took and says so (``taken``), an idle TaskManager
leaves them out of its next heartbeats (``unchanged``) and sends them in full again as soon as
they change; a new leader (a newer epoch) gets them in full first, and a leader that answers
``resend`` gets them in full at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripted_leader import ScriptedLeader, open_gate, start_command

from steward.store.blob import BlobStore
from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import Heartbeat
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

INTERVAL = 0.5
"""The tests' ``heartbeat.interval`` (conftest)."""


def unchanged_since(leader: ScriptedLeader, count: int) -> Heartbeat | None:
    """An unchanged heartbeat the leader got after its first ``count`` ones."""
    return next((beat for beat in leader.sent[count:] if beat.unchanged), None)


@dataclass
class IdleAttempt:
    manager: TaskManager
    leader: ScriptedLeader
    """A leader that keeps reports (it started the attempt)."""
    gate: Path
    """Opened, the attempt ends."""
    idle: Heartbeat
    """The first unchanged heartbeat once the attempt reported its progress."""


@pytest.fixture
def idle_attempt(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
) -> IdleAttempt:
    """A TaskManager whose running attempt's reports are idle (the same every heartbeat)."""
    manager = taskmanager("tm-1")
    leader = scripted("jm-1")
    leader.keeps_reports = True
    gate = tmp_path / "gate"
    leader.command(start_command(blobs, "job-a", leader.epoch, args=[str(gate)]))
    leader.wait_report(lambda r: r.phase is AttemptPhase.RUNNING and bool(r.progress), "job-a")
    since = len(leader.sent)
    idle = wait_until(lambda: unchanged_since(leader, since), 10.0, "an unchanged heartbeat")
    return IdleAttempt(manager, leader, gate, idle)


def test_an_idle_taskmanager_leaves_its_unchanged_reports_out_until_they_change(
    idle_attempt: IdleAttempt,
) -> None:
    leader, gate, idle = idle_attempt.leader, idle_attempt.gate, idle_attempt.idle

    assert idle.attempts == []
    assert idle.digest is not None
    ended = open_gate(leader, gate, "job-a")
    assert isinstance(ended.outcome, FinishedEvent)
    sent = next(b for b in leader.sent if any(r.phase is AttemptPhase.ENDED for r in b.attempts))
    assert not sent.unchanged and sent.digest != idle.digest


def test_the_first_heartbeat_to_a_new_leader_carries_the_reports(
    idle_attempt: IdleAttempt, scripted: Callable[..., ScriptedLeader]
) -> None:
    manager, old, gate = idle_attempt.manager, idle_attempt.leader, idle_attempt.gate
    # The reports an attempt's adoption leaves the same are still sent in full to a leader of
    # another epoch. (These two heartbeats are built, never sent: their numbers stay unsettled,
    # which only a JobManager reads.)
    sender = manager.heartbeat_sender
    assert sender.heartbeat(0.0, old.epoch).unchanged
    assert not sender.heartbeat(0.0, old.epoch + 1).unchanged
    new = scripted("jm-2", wait=False)
    new.keeps_reports = True

    old.step_down()
    new.wait_granted()
    wait_until(lambda: manager.leases.newest_epoch == new.epoch, 10, message="new epoch seen")

    first = wait_until(lambda: new.sent[:1], 10.0, "a heartbeat to the new leader")[0]
    assert not first.unchanged
    assert [(r.job_id, r.phase) for r in first.attempts] == [("job-a", AttemptPhase.RUNNING)]
    assert wait_until(lambda: unchanged_since(new, 1), 10.0, "then unchanged ones").attempts == []
    ended = open_gate(new, gate, "job-a")
    assert isinstance(ended.outcome, FinishedEvent)


def test_a_leader_asking_again_gets_the_reports_in_full_at_once(
    idle_attempt: IdleAttempt,
) -> None:
    leader, gate = idle_attempt.leader, idle_attempt.gate

    leader.forget()
    at = wait_until(lambda: leader.resent[:1], 10.0, "an unchanged heartbeat asked again")[0]

    def full_after() -> int | None:
        return next(
            (i for i in range(at + 1, len(leader.sent)) if not leader.sent[i].unchanged), None
        )

    again = wait_until(full_after, 10.0, "the reports in full")
    # At once, not at the next poll (one interval later).
    assert leader.sent_at[again] - leader.sent_at[at] < INTERVAL / 2
    reports = leader.sent[again].attempts
    assert [(r.job_id, r.phase) for r in reports] == [("job-a", AttemptPhase.RUNNING)]
    open_gate(leader, gate, "job-a")
