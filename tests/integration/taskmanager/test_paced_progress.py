"""A busy TaskManager's progress, paced (issue 22): a real TaskManager whose pipeline reports
progress all the time sends it at most once per ``heartbeat.progress-interval`` (P), held by a
leader that keeps its reports as an idle one is, instead of a full heartbeat every interval;
new progress still reaches the leader within P plus an interval, and a change of the attempt
(its end) still at once.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import ScriptedLeader, first_after, open_gate, start_command

from steward.wire.heartbeat import Heartbeat
from steward.wire.states import AttemptPhase

pytestmark = pytest.mark.zookeeper

INTERVAL = 0.5
"""The tests' ``heartbeat.interval`` (conftest)."""
HOLD = 4.0
"""The idle hold the scripted leader says (and the TaskManager's own)."""
EVERY = 2.0
"""This TaskManager's ``heartbeat.progress-interval``."""
WINDOW = 3 * EVERY
AT_ONCE = HOLD / 2

# Reports progress every 20 ms (a step number, and "marked" once its mark file exists) until
# its gate file exists.
BUSY = """
import os
import time

def main(ctx):
    gate, mark = ctx.args
    step = 0
    while not os.path.exists(gate):
        step += 1
        ctx.report_progress(step=step, marked=os.path.exists(mark))
        time.sleep(0.02)
    return {"done": ctx.job_id}
"""


def busy_taskmanager(rig: Rig, tmp_path: Path) -> tuple[ScriptedLeader, Path, Path]:
    """A TaskManager running ``job-a`` (:data:`BUSY`) for a leader that keeps its reports and
    says :data:`HOLD`, once its progress reached the leader; the gate and the mark."""
    rig.taskmanager(
        "tm-1",
        **{"heartbeat.idle-hold": f"{HOLD:g}s", "heartbeat.progress-interval": f"{EVERY:g}s"},
    )
    leader = rig.scripted("jm-1")
    leader.keeps_reports, leader.idle_hold = True, HOLD
    gate, mark = tmp_path / "gate", tmp_path / "mark"
    leader.command(
        start_command(rig.blobs, "job-a", leader.epoch, args=[str(gate), str(mark)], source=BUSY)
    )
    leader.wait_report(lambda r: r.phase is AttemptPhase.RUNNING and bool(r.progress), "job-a")
    return leader, gate, mark


def steps(beat: Heartbeat) -> list[object]:
    return [r.progress.get("step") for r in beat.attempts if r.progress]


def test_a_busy_taskmanager_sends_new_progress_at_most_once_per_progress_interval(
    rig: Rig, tmp_path: Path
) -> None:
    leader, gate, _mark = busy_taskmanager(rig, tmp_path)
    since = len(leader.sent)
    time.sleep(WINDOW)  # a measuring window: what the TaskManager sends meanwhile
    arrived = list(zip(leader.sent_at[since:], leader.sent[since:], strict=False))

    news = [at for at, beat in arrived if steps(beat)]
    fresh: list[float] = []
    seen: set[object] = set()
    for at, beat in arrived:
        new = set(steps(beat)) - seen
        if new:
            fresh.append(at)
            seen |= new
    # Progress kept coming (within P + an interval each), never twice within P ...
    assert len(fresh) >= WINDOW / (EVERY + INTERVAL) - 1, news
    assert all(b - a >= EVERY - 0.3 for a, b in itertools.pairwise(fresh)), fresh
    # ... and the TaskManager sent about one request per P, not one a half-second interval.
    assert len(arrived) <= WINDOW / EVERY + WINDOW / HOLD + 2, [
        (b.wait, b.unchanged) for _, b in arrived
    ]
    open_gate(leader, gate, "job-a")


def test_new_progress_reaches_the_leader_within_the_progress_interval_and_an_interval(
    rig: Rig, tmp_path: Path
) -> None:
    leader, gate, mark = busy_taskmanager(rig, tmp_path)
    since = len(leader.sent)

    marked = time.monotonic()
    mark.touch()

    def marked_progress(beat: Heartbeat) -> bool:
        return any(r.progress and r.progress.get("marked") for r in beat.attempts)

    at = first_after(leader, since, marked_progress, EVERY + HOLD + 10.0)
    assert at - marked < EVERY + INTERVAL + 1.0
    open_gate(leader, gate, "job-a")


def test_a_busy_attempt_that_ends_is_reported_at_once(rig: Rig, tmp_path: Path) -> None:
    leader, gate, _mark = busy_taskmanager(rig, tmp_path)
    since = len(leader.sent)

    opened = time.monotonic()
    gate.touch()

    def ended(beat: Heartbeat) -> bool:
        return any(r.phase is AttemptPhase.ENDED for r in beat.attempts)

    assert first_after(leader, since, ended, HOLD + 10.0) - opened < AT_ONCE
