"""Livy's batch API through a real cluster (as tests/e2e/cluster/test_livy.py), here across a
failover: a batch submitted through a standby outlives its leader's SIGKILL and completes once,
and the new leader's next batch gets a new id."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.livy_batches import QUICK_DEADLINE, curl, gated, in_state, submit, write_jobs
from steward.testing.processes import ProcessCluster
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def jobs_dir(tmp_path: Path) -> Path:
    return write_jobs(tmp_path / "jobs")


@pytest.fixture
def cluster(
    tmp_path: Path, zk_quorum: str, cluster_id: str, jobs_dir: Path
) -> Iterator[ProcessCluster]:
    extra = {"jobmanager.livy.allowed-sources": str(jobs_dir)}
    with ProcessCluster(tmp_path, zk_quorum, cluster_id, extra=extra) as cluster:
        yield cluster


def test_a_batch_outlives_its_leaders_sigkill_and_completes_once(
    cluster: ProcessCluster, jobs_dir: Path, tmp_path: Path
) -> None:
    first = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    standby = cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1")
    leader = cluster.wait_ready(taskmanagers=1)
    assert leader.id == first.id
    cluster.wait_all_ready(30)
    body, gate, output = gated(jobs_dir, tmp_path, "survivor")
    batch = submit(standby, body)  # forwarded to the leader
    batch_id = batch["id"]
    status, listing = curl(f"{standby.address}/batches")  # listed there at once
    assert status == 200 and [s["id"] for s in listing["sessions"]] == [batch_id], listing
    wait_until(in_state(standby, batch_id, "running"), QUICK_DEADLINE)
    leader.signal(signal.SIGKILL)
    new_leader = cluster.wait_ready(taskmanagers=1, timeout=QUICK_DEADLINE)
    assert new_leader.id == standby.id
    status, view = curl(f"{standby.address}/batches/{batch_id}")
    assert status == 200 and view["id"] == batch_id and view["name"] == "survivor", view
    assert view["state"] == "running", view
    gate.touch()
    wait_until(in_state(standby, batch_id, "success"), QUICK_DEADLINE)
    assert len(output.read_text().splitlines()) == 1, output.read_text()
    with cluster.client() as client:
        assert client.job(f"livy-{batch_id}").attempt_count == 1
    # The counter moved on in ZooKeeper: the new leader's next batch is a new id.
    assert submit(standby, gated(jobs_dir, tmp_path, "next")[0])["id"] == batch_id + 1
