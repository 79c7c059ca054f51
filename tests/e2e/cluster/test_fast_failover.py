"""Fast crash detection with real processes: a SIGKILLed leader is replaced long before its
10 s session expires, and a frozen (SIGSTOPped) leader is never mistaken for a dead one.

The session timeout is 10 s here, so a takeover in under 4 s can only come from the standby's
crash detector (``high-availability.crash-detection``): the test fails without it.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.ticking import read_truth, write_pipeline
from steward.client import Client
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.rest import LeaderView
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 10.0


@pytest.fixture
def cluster(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    with ProcessCluster(tmp_path, zk_quorum, cluster_id, session_timeout="10s") as cluster:
        cluster.start_jobmanager("jm-1")
        cluster.wait_ready(taskmanagers=0)
        standby = cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1")
        cluster.wait_ready(taskmanagers=1)
        wait_until(
            lambda: _answers(cluster, standby), 30, interval=0.1, message="the standby serves"
        )
        cluster.wait_all_ready(30)
        yield cluster


def _answers(cluster: ProcessCluster, proc: Proc) -> bool:
    cluster.check_alive()
    try:
        return bool(cluster.get(proc, "/v1/cluster").get("leader"))
    except (httpx.HTTPError, ValueError):
        return False


def _kept_running(
    cluster: ProcessCluster, client: Client, tmp_path: Path, truth: Path
) -> tuple[Proc, LeaderView]:
    """Job "kept" running, its pipeline's "start" line in ``truth``; the leader's process and
    the leader the cluster names."""
    client.submit(write_pipeline(tmp_path), args=[str(truth), "120", "0.25"], job_id="kept")
    wait_until(lambda: client.job("kept").state is JobState.RUNNING, 30)
    # RUNNING comes with the process's spawn, the pipeline's own "start" line later: a
    # failover faster than the runner's start-up would otherwise leave no line to check
    wait_until(lambda: read_truth(truth), 30, message="the pipeline started")
    leader = cluster.leader()
    before = client.cluster().leader
    assert leader is not None and before is not None
    return leader, before


def test_sigkilled_leader_is_replaced_well_within_the_session_timeout(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    truth = tmp_path / "truth.log"
    with cluster.client(timeout=60) as client:
        leader, before = _kept_running(cluster, client, tmp_path, truth)
        # When the leader's process dies (its host, this machine, lives on)
        started = time.monotonic()
        leader.signal(signal.SIGKILL)
        new_leader = cluster.wait_ready(taskmanagers=1, timeout=SESSION_TIMEOUT * 3)
        took = time.monotonic() - started
        # Then the standby leads and serves long before the dead session could expire
        assert new_leader.id != leader.id
        assert took < SESSION_TIMEOUT * 0.4, f"takeover took {took:.2f}s"
        after = client.cluster().leader
        assert after is not None and after.epoch > before.epoch
        assert "refuses connections" in new_leader.log_text()
        # And the running attempt was adopted, not restarted
        view = client.job("kept")
        assert view.state is JobState.RUNNING and view.attempt_count == 1, view
        assert view.attempts[-1].adopted_by
        client.cancel("kept")
    assert [entry[0] for entry in read_truth(truth)] == ["start"]
    cluster.check_alive()


def test_frozen_leader_keeps_its_term_while_its_port_still_accepts(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    truth = tmp_path / "truth.log"
    with cluster.client(timeout=60) as client:
        leader, before = _kept_running(cluster, client, tmp_path, truth)
        standby = next(p for p in cluster.jobmanagers() if p.id != leader.id)
        # When the leader is frozen for several crash-detection windows, under its session
        leader.signal(signal.SIGSTOP)
        frozen_until = time.monotonic() + SESSION_TIMEOUT * 0.3
        try:
            # Then, the whole time, the standby reports the same leader and epoch
            while time.monotonic() < frozen_until:
                view = cluster.get(standby, "/v1/cluster")
                assert view["leader"]["id"] == leader.id, view
                assert view["leader"]["epoch"] == before.epoch, view
                time.sleep(0.1)  # pacing of the observation, not synchronisation
        finally:
            leader.signal(signal.SIGCONT)
        leader.signalled = False  # resumed: from here on it must stay alive
        # And after it resumes it still leads under the same epoch; the job was not touched
        assert cluster.wait_ready(taskmanagers=1, timeout=30).id == leader.id
        after = client.cluster().leader
        assert after is not None and (after.id, after.epoch) == (before.id, before.epoch)
        view = client.job("kept")
        assert view.state is JobState.RUNNING and view.attempt_count == 1, view
        client.cancel("kept")
    assert "refuses connections" not in standby.log_text()
    assert [entry[0] for entry in read_truth(truth)] == ["start"]
    cluster.check_alive()
