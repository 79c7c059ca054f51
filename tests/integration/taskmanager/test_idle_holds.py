"""A real TaskManager's idle holds (issue 22): one request per hold while nothing changes.

Given a leader that keeps the reports and says how long it holds an unchanged heartbeat
(``idle_hold``), an idle TaskManager's polls ask that long a wait, so it sends one request per
hold instead of one per interval; a command still reaches it at once (the held reply), a
change of its attempts still reaches the leader at once (the notifier), new progress within an
interval (the pacer), and a poll held by a leader that was deposed is left for the new one. A
leader that says no hold (an older one) is polled every interval, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import ScriptedLeader, first_after, open_gate, start_command

from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import Heartbeat
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

INTERVAL = 0.5
"""The tests' ``heartbeat.interval`` (conftest)."""
HOLD = 4.0
"""The idle hold the scripted leader says (and the TaskManager's own ``heartbeat.idle-hold``)."""
AT_ONCE = HOLD / 2
"""Well within one hold: what "at once" is held to on a loaded machine."""

# Reports progress, then again once its mark file exists, then waits for its gate.
MARKED = """
import os
import time

def main(ctx):
    gate, mark = ctx.args
    ctx.report_progress(step="started")
    while not os.path.exists(mark):
        time.sleep(0.02)
    ctx.report_progress(step="marked")
    while not os.path.exists(gate):
        time.sleep(0.02)
    return {"done": ctx.job_id}
"""


def long_polls(leader: ScriptedLeader, since: int = 0) -> list[int]:
    """Indexes (in ``leader.sent``, from ``since``) of the unchanged heartbeats asking a hold."""
    return [i for i in range(since, len(leader.sent)) if _long(leader.sent[i])]


def _long(beat: Heartbeat) -> bool:
    return beat.unchanged and beat.wait > INTERVAL


def next_long_poll(leader: ScriptedLeader) -> float:
    """Wait for the next long poll to arrive; when it did (monotonic)."""
    since = len(leader.sent)
    index = wait_until(lambda: long_polls(leader, since)[:1], HOLD + 10.0, "a long poll")[0]
    return leader.sent_at[index]


def lists(job_id: str, phase: AttemptPhase | None = None) -> Callable[[Heartbeat], bool]:
    return lambda beat: any(r.job_id == job_id and phase in (None, r.phase) for r in beat.attempts)


@dataclass
class Idle:
    manager: TaskManager
    leader: ScriptedLeader
    gate: Path
    mark: Path


def idle_taskmanager(rig: Rig, tmp_path: Path, *, says_hold: float | None = HOLD) -> Idle:
    """A TaskManager running ``job-a`` (:data:`MARKED`) whose leader keeps its reports and says
    ``says_hold``, once its first unchanged heartbeat arrived."""
    manager = rig.taskmanager("tm-1", **{"heartbeat.idle-hold": f"{HOLD:g}s"})
    leader = rig.scripted("jm-1")
    leader.keeps_reports, leader.idle_hold = True, says_hold
    gate, mark = tmp_path / "gate", tmp_path / "mark"
    leader.command(
        start_command(rig.blobs, "job-a", leader.epoch, args=[str(gate), str(mark)], source=MARKED)
    )
    leader.wait_report(lambda r: r.progress == {"step": "started"}, "job-a")
    since = len(leader.sent)
    wait_until(lambda: any(b.unchanged for b in leader.sent[since:]), 10.0, "unchanged")
    return Idle(manager, leader, gate, mark)


def test_an_idle_taskmanager_sends_one_poll_per_idle_hold(rig: Rig, tmp_path: Path) -> None:
    idle = idle_taskmanager(rig, tmp_path)
    leader = idle.leader

    first = next_long_poll(leader)
    since = len(leader.sent)
    second = next_long_poll(leader)

    between = leader.sent[since:]
    assert len(between) == 1, [(b.unchanged, b.wait) for b in between]  # nothing in between
    assert between[0].wait == HOLD and between[0].attempts == []
    assert second - first >= HOLD - 0.2  # one request per hold, not per interval (0.5 s)


def test_a_leader_that_says_no_idle_hold_is_polled_every_interval(rig: Rig, tmp_path: Path) -> None:
    idle = idle_taskmanager(rig, tmp_path, says_hold=None)
    leader = idle.leader
    since = len(leader.sent)

    polls = wait_until(
        lambda: [b for b in leader.sent[since:] if b.unchanged][2:] or None, 10.0, "three polls"
    )

    assert polls is not None
    assert all(beat.wait == INTERVAL for beat in leader.sent[since:] if beat.unchanged)


def test_a_command_reaches_a_taskmanager_in_its_idle_hold_at_once(rig: Rig, tmp_path: Path) -> None:
    idle = idle_taskmanager(rig, tmp_path)
    leader = idle.leader
    next_long_poll(leader)
    since = len(leader.sent)

    queued = time.monotonic()
    leader.command(start_command(rig.blobs, "job-b", leader.epoch, args=[str(tmp_path / "b")]))

    assert first_after(leader, since, lists("job-b")) - queued < AT_ONCE


def test_an_attempt_that_ends_is_reported_at_once_during_an_idle_hold(
    rig: Rig, tmp_path: Path
) -> None:
    idle = idle_taskmanager(rig, tmp_path)
    leader = idle.leader
    idle.mark.touch()
    leader.wait_report(lambda r: r.progress == {"step": "marked"}, "job-a")
    next_long_poll(leader)
    since = len(leader.sent)

    opened = time.monotonic()
    idle.gate.touch()

    assert first_after(leader, since, lists("job-a", AttemptPhase.ENDED)) - opened < AT_ONCE


def test_new_progress_reaches_the_leader_within_an_interval_during_an_idle_hold(
    rig: Rig, tmp_path: Path
) -> None:
    idle = idle_taskmanager(rig, tmp_path)
    leader = idle.leader
    next_long_poll(leader)
    since = len(leader.sent)

    marked = time.monotonic()
    idle.mark.touch()

    def progressed(beat: Heartbeat) -> bool:
        return any(r.progress == {"step": "marked"} for r in beat.attempts)

    assert first_after(leader, since, progressed) - marked < INTERVAL + 1.0
    open_gate(leader, idle.gate, "job-a")


def test_a_poll_held_by_a_deposed_leader_is_left_for_the_new_one(rig: Rig, tmp_path: Path) -> None:
    idle = idle_taskmanager(rig, tmp_path)
    old, sender = idle.leader, idle.manager.heartbeat_sender
    next_long_poll(old)  # held by the old leader for up to HOLD
    new = rig.scripted("jm-2", wait=False)
    new.keeps_reports, new.idle_hold = True, HOLD

    old.step_down()  # it goes on holding that poll, as a frozen or cut-off leader would
    new.wait_granted()
    wait_until(lambda: new.sent[:1], AT_ONCE, "the notifier's heartbeat to the new leader")
    since = len(new.sent)
    queued = time.monotonic()
    new.command(start_command(rig.blobs, "job-b", new.epoch, args=[str(tmp_path / "b")]))

    assert first_after(new, since, lists("job-b")) - queued < AT_ONCE
    assert sender.abandoned_polls >= 1
