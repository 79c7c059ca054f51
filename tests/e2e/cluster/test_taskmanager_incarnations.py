"""A TaskManager that dies under a job, in the two ways a safety review found mishandled.

Real processes and a real ZooKeeper; ground truth from the pipeline's own file (test_jobs.py's
TICKING pipeline), not from what Steward reports.

- A TaskManager restarted at once under the same id: its registration node is back before
  the leader notices the old one gone, so membership alone sees nothing. The leader must tell
  incarnations apart and treat the old one's attempt as lost.
- A new leader adopts a running attempt, then that attempt's TaskManager dies before it
  reported to the new leader: the attempt is lost (recorded LOST, a restart spent, its number
  kept), not a start command that never left (erased, number reused).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from e2e.ticking import TICKING, read_truth
from steward.client import Client
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.jobs import FixedDelayRestart
from steward.wire.states import AttemptState, JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

DEADLINE = 60.0


def _submit_ticking(client: Client, tmp_path: Path, job_id: str, ticks: int) -> Path:
    pipeline = tmp_path / "ticking.py"
    pipeline.write_text(TICKING)
    truth = tmp_path / f"{job_id}.truth"
    client.submit(
        pipeline,
        args=[str(truth), str(ticks), "0.1"],
        job_id=job_id,
        restart=FixedDelayRestart(attempts=3, delay=0.0),
    )
    wait_until(lambda: read_truth(truth), 30, message="attempt started")
    wait_until(lambda: client.job(job_id).state is JobState.RUNNING, 30)
    return truth


def _running_on(client: Client, job_id: str, taskmanagers: dict[str, Proc]) -> Proc:
    attempt = client.job(job_id).attempts[-1]
    return taskmanagers[attempt.taskmanager]


def test_taskmanager_restarted_under_the_same_id_gets_its_attempt_replaced(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    with process_cluster.client() as client:
        truth = _submit_ticking(client, tmp_path, "reborn", ticks=60)
        old = process_cluster.procs[-1]
        old.signal(signal.SIGKILL)
        process_cluster.start_taskmanager("tm-1")  # the same id, at once

        result = client.wait("reborn", timeout=DEADLINE)

        assert result.state.value == "FINISHED", result.error
        view = client.job("reborn")
    attempts = sorted(view.attempts, key=lambda a: a.number)
    assert [a.number for a in attempts] == [1, 2]
    assert attempts[0].state is AttemptState.LOST
    assert attempts[1].state is AttemptState.FINISHED
    runs = read_truth(truth)
    assert [(kind, n) for kind, n, _ in runs if kind == "start"] == [("start", 1), ("start", 2)]
    assert [(kind, n) for kind, n, _ in runs if kind == "end"] == [("end", 2)]


def test_adopted_attempt_whose_taskmanager_dies_is_lost_not_rejected(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_jobmanager("jm-2")
    taskmanagers = {tm: process_cluster.start_taskmanager(tm) for tm in ("tm-1", "tm-2")}
    leader = process_cluster.wait_ready(taskmanagers=2)
    # The standby too: the adoption needs it to take over (crash detection) before the killed
    # TaskManager's session expires; a standby still joining the line waits out the leader's
    # session, which the TaskManager's ends with.
    process_cluster.wait_all_ready()
    with process_cluster.client() as client:
        _submit_ticking(client, tmp_path, "orphaned", ticks=40)
        running_on = _running_on(client, "orphaned", taskmanagers)
        # Together: the new leader adopts the attempt from its lease (which outlives the
        # TaskManager until its session expires), then sees its TaskManager go.
        leader.signal(signal.SIGKILL)
        running_on.signal(signal.SIGKILL)
        process_cluster.wait_ready(taskmanagers=1, timeout=DEADLINE)

        result = client.wait("orphaned", timeout=DEADLINE)

        assert result.state.value == "FINISHED", result.error
        view = client.job("orphaned")
    attempts = sorted(view.attempts, key=lambda a: a.number)
    assert [a.number for a in attempts] == [1, 2], "the lost attempt's number was reused"
    assert attempts[0].state is AttemptState.LOST
    assert attempts[0].adopted_by, "the new leader did not adopt the attempt first"
    assert attempts[0].cause is not None and "TaskManagerLost" in attempts[0].cause.type
    assert attempts[1].state is AttemptState.FINISHED
