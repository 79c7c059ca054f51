"""End to end: a job's timeout outlives its leader (issue 24). The deadline is derived from
what is stored, so a new leader enforces it after the old one is SIGKILLed; the attempt is
adopted, not run again. (The timeout and env on a steady cluster: test_job_options.py.)
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from e2e.ticking import read_truth, write_pipeline
from steward.testing.processes import ProcessCluster
from steward.wire.job_options import TIMEOUT_ERROR_TYPE
from steward.wire.states import JobState
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper


def test_a_new_leader_enforces_the_timeout_after_a_leader_sigkill(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    leader = process_cluster.wait_ready(taskmanagers=1)
    truth = tmp_path / "truth.log"
    with process_cluster.client(timeout=60) as client:
        job = client.submit(
            write_pipeline(tmp_path), args=[str(truth), "100000", "0.2"], timeout="20s"
        )
        wait_until(lambda: client.job(job.job_id).state is JobState.RUNNING, 30)
        # Killed well before its deadline: only the next leader can enforce it.
        assert job.deadline is not None and time.time() < job.deadline - 4, "too late to kill"
        leader.signal(signal.SIGKILL)
        new_leader = process_cluster.wait_ready(taskmanagers=1, timeout=30)
        assert new_leader.id != leader.id
        result = client.wait(job.job_id, timeout=60)
        after = client.cluster().leader
    assert result.state.value == "CANCELED", result
    assert result.error is not None and result.error.type == TIMEOUT_ERROR_TYPE
    assert result.finished_at >= job.deadline
    assert after is not None and after.id == new_leader.id
    starts = [entry for entry in read_truth(truth) if entry[0] == "start"]
    assert len(starts) == 1, "the attempt was adopted, not run again"
    wait_until(lambda: not pid_alive(starts[0][2]), 15, message="runner gone after the timeout")
    process_cluster.check_alive()
