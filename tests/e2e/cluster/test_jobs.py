"""End to end, with real processes and a real ZooKeeper: jobs through a Steward cluster.

Ground truth comes from the pipelines themselves: each attempt appends ``start``/``end``
lines with its attempt number and pid to a file outside Steward's stores, so "nothing ran
twice" is checked against what really ran, not against what Steward reports.

The tests share one cluster (a JobManager, a TaskManager with two slots): each uses job ids
of its own and waits for its jobs to end. The leader-SIGKILL test needs a cluster of its own:
tests/e2e/cluster/test_job_adoption.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.module_clusters import module_cluster
from e2e.ticking import read_truth, write_pipeline
from steward.testing.processes import ProcessCluster
from steward.wire.jobs import FixedDelayRestart, NoRestart
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    with module_cluster(tmp_path_factory, zookeeper, "jobs") as cluster:
        yield cluster


def test_submit_run_finish_and_result(cluster: ProcessCluster, tmp_path: Path) -> None:
    truth = tmp_path / "truth.log"
    with cluster.client() as client:
        job = client.submit(
            write_pipeline(tmp_path),
            args=[str(truth), "2", "0.1"],
            job_id="tick-1",
            labels={"team": "data"},
        )
        assert job.job_id == "tick-1"
        assert job.labels == {"team": "data"}
        # The leader knows how long ago each TaskManager heartbeat
        (taskmanager,) = client.cluster().taskmanagers
        assert taskmanager.heartbeat_age is not None and 0 <= taskmanager.heartbeat_age < 30
        result = client.wait("tick-1", timeout=60)
        assert result.state.value == "FINISHED"
        assert result.value["ticks"] == 2
        view = client.job("tick-1")
        assert view.state is JobState.FINISHED
        # The result outlives the job's cleanup: HA data gone, the entry CLEAN; the view keeps
        # the job's labels
        wait_until(lambda: client.result("tick-1").cleanup == "CLEAN", 20)
        assert client.job("tick-1").labels == {"team": "data"}
    assert [kind for kind, _, _ in read_truth(truth)] == ["start", "end"]


def test_cancel_stops_the_attempt(cluster: ProcessCluster, tmp_path: Path) -> None:
    truth = tmp_path / "truth.log"
    with cluster.client() as client:
        client.submit(
            write_pipeline(tmp_path), args=[str(truth), "100000", "0.2"], job_id="forever"
        )
        wait_until(lambda: read_truth(truth), 30, message="attempt started")
        pid = read_truth(truth)[0][2]
        wait_until(lambda: client.job("forever").state is JobState.RUNNING, 20)
        client.cancel("forever")
        result = client.wait("forever", timeout=30)
        assert result.state.value == "CANCELED"
    wait_until(lambda: not pid_alive(pid), 15, message="runner gone after cancel")


def test_failing_pipeline_is_restarted_then_failed(
    cluster: ProcessCluster,
) -> None:
    with cluster.client() as client:
        client.submit(
            EXAMPLES / "failing.py",
            job_id="fails",
            restart=FixedDelayRestart(attempts=2, delay=0.2),
        )
        result = client.wait("fails", timeout=60)
        assert result.state.value == "FAILED"
        assert result.error is not None
        assert result.error.type.endswith("ReportValidationError")
        assert "negative amount" in result.error.message
        assert result.error.traceback and "validate(ROWS)" in result.error.traceback
        view = client.job("fails")
        assert view.state is JobState.FAILED
        # The ended job's view counts its failed attempts: 2 restarts allowed, 3 attempts
        assert (view.attempt_count, view.failures) == (3, 3)


def test_bad_pipeline_fails_alone(cluster: ProcessCluster, tmp_path: Path) -> None:
    """A pipeline that cannot even be imported fails its job; the cluster is unharmed."""
    broken = tmp_path / "broken.py"
    broken.write_text("import definitely_not_a_module_anywhere\n\ndef main(ctx):\n    pass\n")
    truth = tmp_path / "truth.log"
    with cluster.client() as client:
        client.submit(broken, job_id="broken", restart=NoRestart())
        client.submit(write_pipeline(tmp_path), args=[str(truth), "1", "0.1"], job_id="fine")
        broken_result = client.wait("broken", timeout=60)
        assert broken_result.state.value == "FAILED"
        assert broken_result.error is not None
        assert "definitely_not_a_module_anywhere" in broken_result.error.message
        assert client.wait("fine", timeout=60).state.value == "FINISHED"
