"""Seed 002: a job finishes while leadership moves.

The invariant of the job graph store: **a pointer (``jobgraphs/<id>``) exists iff a new
leader must recover the job**. Around a failover the old and the new leader may both act on
one job; Steward keeps the invariant by writing the result (DIRTY) before any cleanup, by
fencing every write with the leader's epoch, and by never starting a job that has a result
(rules 2 and 7). Each interleaving below finishes the job at a different moment of
the failover; whatever the order, after things settle the job has its result (CLEAN), no
pointer, no lease, no status record, it ran exactly once, and its value is the one its only
attempt returned.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth
from e2e.incidents.zkview import ZkView
from steward.errors import StewardError
from steward.testing.processes import Proc, ProcessCluster
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOB = "finishes-during-failover"
DEADLINE = 60.0


def _kill_then_finish(leader: Proc, marker: Path, zk_view: ZkView) -> None:
    leader.signal(signal.SIGKILL)
    marker.touch()  # the attempt ends while there is no leader; the next one hears of it


def _finish_and_kill(leader: Proc, marker: Path, zk_view: ZkView) -> None:
    marker.touch()
    leader.signal(signal.SIGKILL)  # at once: the outcome may or may not have reached it


def _kill_during_cleanup(leader: Proc, marker: Path, zk_view: ZkView) -> None:
    marker.touch()
    # The result is recorded (DIRTY): the leader is removing the job's HA data now.
    wait_until(lambda: zk_view.result(JOB) is not None, DEADLINE, interval=0.005)
    leader.signal(signal.SIGKILL)


def _finish_and_sigterm(leader: Proc, marker: Path, zk_view: ZkView) -> None:
    marker.touch()
    leader.signal(signal.SIGTERM)  # a graceful stop hands leadership over at once


INTERLEAVINGS: dict[str, Callable[[Proc, Path, ZkView], None]] = {
    "sigkill-before-finish": _kill_then_finish,
    "sigkill-at-finish": _finish_and_kill,
    "sigkill-during-cleanup": _kill_during_cleanup,
    "sigterm-at-finish": _finish_and_sigterm,
}


@pytest.mark.parametrize(
    "interleaving",
    [
        pytest.param(name, marks=[pytest.mark.slow] if name == "sigterm-at-finish" else [])
        for name in INTERLEAVINGS
    ],
)
def test_job_finishing_during_failover_keeps_result_and_no_pointer(
    interleaving: str,
    process_cluster: ProcessCluster,
    zk_view: ZkView,
    truth: GroundTruth,
    tmp_path: Path,
) -> None:
    # Given: a running job that finishes as soon as the marker file exists.
    leader = kit.start(process_cluster, jobmanagers=2, taskmanagers=1)
    marker = tmp_path / "finish-now"
    with process_cluster.client(timeout=60) as client:
        kit.submit(client, truth, JOB, "--finish-on", str(marker), "--interval", "0.02")
        kit.wait_running(client, truth, [JOB], DEADLINE)
        assert zk_view.pointer(JOB)

        # When: it finishes around the moment the leader goes.
        INTERLEAVINGS[interleaving](leader, marker, zk_view)
        new_leader = process_cluster.wait_ready(taskmanagers=1, timeout=DEADLINE)
        assert new_leader.id != leader.id

        # Then: its result is kept and its HA data is gone, the pointer first of all.
        def clean() -> bool:
            process_cluster.check_alive()
            with contextlib.suppress(StewardError, httpx.HTTPError):
                return client.result(JOB).cleanup == "CLEAN"
            return False

        wait_until(clean, DEADLINE, interval=0.1, message="result CLEAN")
        result = client.result(JOB)
        (run,) = truth.runs(JOB)  # it ran exactly once
        assert result.state.value == "FINISHED", result
        assert isinstance(result.value, dict) and result.value["pid"] == run.pid, result
        assert not zk_view.pointer(JOB), "a finished job keeps its pointer: it would be recovered"
        assert zk_view.lease(JOB) is None
        assert zk_view.status(JOB) is None
    # Nothing brings it back: another failover (to a fresh JobManager) recovers nothing of it.
    process_cluster.start_jobmanager("jm-3")
    new_leader.signal(signal.SIGKILL)
    process_cluster.wait_ready(taskmanagers=1, timeout=DEADLINE)
    with process_cluster.client(timeout=60) as client:
        assert client.result(JOB).state.value == "FINISHED"
        assert len(truth.starts(JOB)) == 1, truth.runs(JOB)
        assert not zk_view.pointer(JOB)
        process_cluster.check_alive()
