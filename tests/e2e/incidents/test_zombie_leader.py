"""A zombie leader: frozen (SIGSTOP) past its session timeout, then resumed.

While it sleeps a standby takes over with a higher epoch and the cluster moves on (a job is
cancelled, another submitted). When the old leader wakes it still believes it leads, and it
is asked to act at once (a cancel and submissions sent straight to it). rule 2: every
leader write is a transaction that checks ``leader/epoch``'s version, so none of its writes
lands: the epoch, ``leader/info``, every status record and every pointer stay the new
leader's. It steps down, rejoins as a standby, and can lead again later.
"""

from __future__ import annotations

import contextlib
import signal
import time

import httpx
import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth
from e2e.incidents.zkview import ZkView
from steward.client import Client
from steward.errors import StewardError
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 4.0  # ProcessCluster's default
DEADLINE = 60.0
CANCELLED, SURVIVOR = "cancelled-meanwhile", "submitted-meanwhile"
ZOMBIE_SUBMISSION = "sent-to-the-zombie"


def _pester(zombie: Proc, seconds: float) -> None:
    """Ask the waking zombie, straight, to cancel the job it believes runs, and to take a
    submission, for ``seconds``. Once it knows it is a standby it forwards both to the new
    leader, which answers for the cancelled job and may accept the submission (legitimately).
    """
    deadline = time.monotonic() + seconds
    with Client([zombie.address], timeout=1.0) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(StewardError, httpx.HTTPError):
                client.cancel(CANCELLED)
            with contextlib.suppress(StewardError, httpx.HTTPError):
                client.submit(kit.PIPELINE, args=["/dev/null"], job_id=ZOMBIE_SUBMISSION)


def test_frozen_leader_cannot_write_after_a_standby_took_over(
    process_cluster: ProcessCluster, zk_view: ZkView, truth: GroundTruth
) -> None:
    # Given: a leader, a standby, a TaskManager, and a running job.
    zombie = kit.start(process_cluster, jobmanagers=2, taskmanagers=1)
    standby = next(p for p in process_cluster.jobmanagers() if p.id != zombie.id)
    with Client([p.address for p in process_cluster.jobmanagers()], timeout=60) as client:
        kit.submit(client, truth, CANCELLED)
        kit.wait_running(client, truth, [CANCELLED], DEADLINE)
    old_epoch = zk_view.epoch()

    # When: the leader freezes past its session timeout; the standby takes over.
    zombie.signal(signal.SIGSTOP)
    wait_until(lambda: kit.role(standby) == "leader", DEADLINE, message="standby took over")
    new_epoch = zk_view.epoch()
    assert new_epoch > old_epoch
    with Client([standby.address], timeout=60) as client:  # never the frozen one
        wait_until(lambda: client.cluster().taskmanagers, DEADLINE)
        client.cancel(CANCELLED)
        assert client.wait(CANCELLED, timeout=DEADLINE).state.value == "CANCELED"
        kit.submit(client, truth, SURVIVOR)
        kit.wait_running(client, truth, [SURVIVOR], DEADLINE)
        wait_until(lambda: client.result(CANCELLED).cleanup == "CLEAN", DEADLINE)
    info_before = zk_view.json(zk_view.layout.leader_info)
    survivor_before = zk_view.status(SURVIVOR)
    assert survivor_before is not None and survivor_before[0]["epoch"] == new_epoch

    # When: the zombie wakes up and is asked to act at once.
    zombie.signal(signal.SIGCONT)
    zombie.signalled = False  # from now on it must stay alive
    _pester(zombie, 2 * SESSION_TIMEOUT)
    wait_until(lambda: kit.role(zombie) == "standby", DEADLINE, message="zombie stepped down")

    # Then: nothing it did landed.
    assert zk_view.epoch() == new_epoch
    assert zk_view.json(zk_view.layout.leader_info) == info_before
    assert zk_view.status(CANCELLED) is None, "a cleaned-up job's status came back"
    assert zk_view.pointer(CANCELLED) is False
    survivor_after = zk_view.status(SURVIVOR)
    assert survivor_after is not None and survivor_after[0]["epoch"] == new_epoch
    with Client([standby.address], timeout=60) as client:
        assert client.result(CANCELLED).state.value == "CANCELED"
        assert client.job(SURVIVOR).state is JobState.RUNNING
        for job_id in zk_view.children(zk_view.layout.jobgraphs):
            # A pointer of a submission the zombie forwarded is the new leader's own job.
            view = client.job(job_id)
            assert view.attempts == [] or view.attempts[0].epoch == new_epoch, view
            status = zk_view.status(job_id)
            assert status is None or status[0]["epoch"] == new_epoch, status
    truth.assert_started_once(SURVIVOR)
    truth.assert_started_once(CANCELLED)
    log = zombie.log_text()
    assert "fenced write rejected" in log or "leadership revoked" in log, log[-3000:]

    # And: it rejoined as a standby: when the new leader dies, it leads again.
    standby.signal(signal.SIGKILL)
    wait_until(lambda: kit.role(zombie) == "leader", DEADLINE, message="old leader leads again")
    assert zk_view.epoch() > new_epoch
    with Client([zombie.address], timeout=60) as client:
        kit.wait_running(client, truth, [SURVIVOR], DEADLINE)
        assert client.job(SURVIVOR).attempt_count == 1
    truth.assert_started_once(SURVIVOR)
    process_cluster.check_alive()
