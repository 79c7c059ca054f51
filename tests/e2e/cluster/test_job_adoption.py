"""End to end, with real processes and a real ZooKeeper: a leader's SIGKILL while an attempt
runs (rule 8). Ground truth comes from the pipeline itself (see tests/e2e/cluster/test_jobs.py).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from e2e.ticking import read_truth, write_pipeline
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper


def test_leader_sigkill_running_attempt_is_adopted(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    """rule 8: the new leader adopts the running attempt; it is not restarted."""
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.start_taskmanager("tm-2")
    leader = process_cluster.wait_ready(taskmanagers=2)
    truth = tmp_path / "truth.log"
    with process_cluster.client(timeout=60) as client:
        client.submit(write_pipeline(tmp_path), args=[str(truth), "40", "0.25"], job_id="adopted")
        wait_until(lambda: client.job("adopted").state is JobState.RUNNING, 30)
        before = client.cluster().leader
        assert before is not None and before.id == leader.id
        leader.signal(signal.SIGKILL)
        new_leader = process_cluster.wait_ready(taskmanagers=2, timeout=30)
        assert new_leader.id != leader.id
        after = client.cluster().leader
        assert after is not None and after.epoch > before.epoch
        view = client.job("adopted")
        assert view.state is JobState.RUNNING, view
        assert view.attempt_count == 1
        assert view.attempts[-1].adopted_by, "the new leader did not adopt the attempt"
        result = client.wait("adopted", timeout=60)
        assert result.state.value == "FINISHED"
        final = client.job("adopted")
    starts = [entry for entry in read_truth(truth) if entry[0] == "start"]
    assert len(starts) == 1, f"the attempt ran more than once: {read_truth(truth)}"
    assert result.value["pid"] == starts[0][2]
    assert final.result is not None
    process_cluster.check_alive()
