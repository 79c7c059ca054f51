"""Regression tests for bugs the chaos campaigns found, each reproduced deterministically.

Bug 1 (found by the CI campaign, seed 20261121): the leader's deploy step marked the attempt
deployed and its slot assigned *before* reading the job's latest checkpoint from ZooKeeper; when
that read failed (the connection dropped during a ZooKeeper server fault), the scheduling pass
was retried but the start command was never queued, so the job sat in its "deployed" attempt
forever (no TaskManager ever heard of it) and never reached a result.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.jobmanager.jobmanager_harness import JobManagerCluster, PretendTaskManager
from steward.errors import ZooKeeperUnavailableError
from steward.store.checkpoints import CompletedCheckpointStore, RecoveredCheckpoint
from steward.wire.heartbeat import StartAttempt

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def cluster(zk_quorum: str, cluster_id: str, tmp_path: Path) -> Iterator[JobManagerCluster]:
    with JobManagerCluster(zk_quorum, cluster_id, tmp_path) as made:
        yield made


def test_a_checkpoint_read_failing_at_deploy_does_not_strand_the_job(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-ok")
    cluster.wait_state(leader, "job-ok", "SCHEDULED")
    real_latest = CompletedCheckpointStore.latest
    failures: list[str] = []

    def connection_lost_once(store: CompletedCheckpointStore) -> RecoveredCheckpoint:
        if not failures:
            failures.append("injected")
            raise ZooKeeperUnavailableError("injected: connection lost reading checkpoints")
        return real_latest(store)

    monkeypatch.setattr(CompletedCheckpointStore, "latest", connection_lost_once)
    tm = PretendTaskManager(cluster, "tm-1").register()

    start, _reply = tm.wait_command(leader, StartAttempt, "job-ok")

    assert failures == ["injected"], "the fault was not injected at the deploy step"
    assert (start.job_id, start.attempt) == ("job-ok", 1)
