"""Seed 000: one job that cannot be recovered must not take the cluster down.

In Flink, a job whose recovery threw (its InitializeOnMaster hook refused an existing
output) made every JobManager exit in turn, and a restart of the cluster failed the same way
until the job graph store was destroyed. Steward recovers each job on its own (rule 6):
the poisoned job becomes FAILED with its cause, every other job is adopted where it runs, no
process exits, and a full restart of the cluster comes up.

Three poisons: the job's ``initialize`` hook raises on recovery (its output exists), its job
graph blob is deleted from the storage dir, or the blob's bytes are overwritten. The default
run poisons two jobs of one cluster at once (the hook and the overwritten blob): both must
fail alone, each with its own cause, in the same recovery.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth, pid_gone
from e2e.incidents.zkview import ZkView
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

GOOD = ["good-1", "good-2", "good-3"]
DEADLINE = 60.0  # several session timeouts (4 s) on a loaded 2-core machine

CAUSES = {
    "initialize-raises": "already exists",
    "blob-deleted": "missing",
    "blob-corrupted": "header",
}
WAITING = "initialize-raises"
"""The poison of a job that waits (SCHEDULED, no attempt to adopt) when the leader dies: the
new leader runs its initialize hook again, which refuses the output the first run made."""


def _bad(poison: str) -> str:
    return f"poisoned-{poison}"


def _blob_path(tmp_path: Path, zk_view: ZkView, job_id: str) -> Path:
    blob = zk_view.pointer_blob(job_id)
    assert blob is not None, f"{job_id} has no job graph pointer"
    return tmp_path / "storage" / blob


def _poison(poison: str, tmp_path: Path, zk_view: ZkView) -> None:
    if poison == WAITING:
        return  # the output the first initialize created is the poison
    blob = _blob_path(tmp_path, zk_view, _bad(poison))
    assert blob.exists(), blob
    if poison == "blob-deleted":
        blob.unlink()
    else:
        blob.write_bytes(b"\x00garbage\xff" * 64)


# Two poisons share one cluster's recovery in the default run (each job fails alone, with its
# own cause, beside the other); the third, whose path is the corrupted blob's up to the read,
# runs with -m slow.
@pytest.mark.parametrize(
    "poisons",
    [
        pytest.param((WAITING, "blob-corrupted"), id="initialize-raises+blob-corrupted"),
        pytest.param(("blob-deleted",), id="blob-deleted", marks=pytest.mark.slow),
    ],
)
def test_unrecoverable_jobs_fail_alone_and_cluster_restarts(
    poisons: tuple[str, ...],
    process_cluster: ProcessCluster,
    zk_view: ZkView,
    truth: GroundTruth,
    tmp_path: Path,
) -> None:
    # Given: 2 JobManagers, 2 TaskManagers (2 slots each), three healthy long-running jobs
    # and one for each poison, which will not survive recovery.
    leader = kit.start(process_cluster, jobmanagers=2, taskmanagers=2)
    output = tmp_path / "output.txt"
    running = [*GOOD, *(_bad(poison) for poison in poisons if poison != WAITING)]
    with process_cluster.client(timeout=60) as client:
        for job_id in GOOD:
            kit.submit(client, truth, job_id)
        for poison in poisons:
            if poison == WAITING:
                # 3 slots fit no TaskManager: it waits (SCHEDULED) with no attempt to adopt.
                kit.submit(client, truth, _bad(poison), "--init-output", str(output), slots=3)
                wait_until(output.exists, DEADLINE, message="first initialize ran")
                wait_until(
                    lambda: kit.job_state(client, _bad(WAITING)) is JobState.SCHEDULED, DEADLINE
                )
            else:
                kit.submit(client, truth, _bad(poison))
        kit.wait_running(client, truth, running, DEADLINE)
        epoch_before = zk_view.epoch()
        for poison in poisons:
            _poison(poison, tmp_path, zk_view)

        # When: the leader is SIGKILLed.
        leader.signal(signal.SIGKILL)
        new_leader = process_cluster.wait_ready(taskmanagers=2, timeout=DEADLINE)
        assert new_leader.id != leader.id
        assert zk_view.epoch() > epoch_before

        # Then: only the poisoned jobs are FAILED, each with a cause that names its problem.
        for poison in poisons:
            bad = _bad(poison)
            kit.wait_state(process_cluster, client, bad, JobState.FAILED, DEADLINE)
            result = client.result(bad)
            assert result.state.value == "FAILED"
            assert result.error is not None
            assert CAUSES[poison] in result.error.message, (poison, result.error)
        # Every other job was adopted: same attempt, still running, never started again.
        for job_id in GOOD:
            view = client.job(job_id)
            assert view.state is JobState.RUNNING, view
            assert view.attempt_count == 1, view
            assert view.attempts[-1].adopted_by, f"{job_id} was not adopted: {view}"
            truth.assert_started_once(job_id)
        for poison in poisons:
            bad = _bad(poison)
            # A poisoned job's result is cleaned up: no pointer (it must not be recovered).
            wait_until(lambda bad=bad: client.result(bad).cleanup == "CLEAN", DEADLINE)
            assert not zk_view.pointer(bad)
            if poison != WAITING:
                # Its attempt was running: a FAILED job must not keep running somewhere.
                (run,) = truth.runs(bad)
                wait_until(lambda pid=run.pid: pid_gone(pid), DEADLINE, message="attempt stopped")
                wait_until(lambda bad=bad: zk_view.lease(bad) is None, DEADLINE, message="freed")
        process_cluster.check_alive()

    # When: the whole cluster is stopped and started again (new processes, same namespace
    # and storage).
    process_cluster.stop()
    process_cluster.forget_stopped()
    kit.start(process_cluster, jobmanagers=2, taskmanagers=2, tag="r")

    # Then: it comes up, the poisoned jobs stay FAILED, the others run again.
    with process_cluster.client(timeout=60) as client:
        # Their attempts ended with their TaskManagers: each is started again, once.
        def restarted() -> bool:
            return all(
                kit.job_state(client, job_id) is JobState.RUNNING and len(truth.starts(job_id)) == 2
                for job_id in GOOD
            )

        wait_until(restarted, DEADLINE, interval=0.1, message="healthy jobs recovered")
        for poison in poisons:
            bad = _bad(poison)
            assert client.job(bad).state is JobState.FAILED
            assert client.result(bad).error is not None
            assert not truth.starts(bad) or len(truth.starts(bad)) == 1
        for job_id in GOOD:
            truth.assert_no_overlap(job_id)
        process_cluster.check_alive()
