"""Leader writes while ZooKeeper is unreachable: nothing acknowledged is lost.

A cancel is answered only once ZooKeeper holds it, so that no next leader can lose it.

A leader cut off from ZooKeeper (its server stopped) cannot write the job's CANCELLING status.
Answering 202 then would let a new leader, recovering from ZooKeeper, run the job on as if the
user had never cancelled it. The cancel must be refused with 503 (the client retries), and the
retry, once ZooKeeper is back, must store it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ha_harness import restart_server
from jobmanager_harness import (
    PIPELINE,
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.artifacts.pipeline import build_artifact
from steward.store.job_graphs import JobGraphStore
from steward.wire.heartbeat import StartAttempt
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.record_format import decode_status
from steward.wire.states import AttemptPhase, JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def own_cluster(
    stoppable_zookeeper: ManagedEnsemble, cluster_id: str, tmp_path: Path
) -> Iterator[JobManagerCluster]:
    with JobManagerCluster(stoppable_zookeeper.connect_string, cluster_id, tmp_path) as made:
        yield made


def test_a_cancel_the_leader_cannot_store_is_refused_and_stored_on_retry(
    own_cluster: JobManagerCluster, stoppable_zookeeper: ManagedEnsemble
) -> None:
    cluster = own_cluster
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-cut")
    start, _ = tm.wait_command(leader, StartAttempt, "job-cut")
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    cluster.wait_state(leader, "job-cut", "RUNNING")
    status_path = cluster.layout.job_status("job-cut")

    # When the leader loses ZooKeeper (its session lives on: the server comes back in time)
    stoppable_zookeeper.stop_server(1)
    wait_until(lambda: not leader.session.connected, 10, message="leader suspended")
    # Then a cancel is refused with 503, not acknowledged
    refused = cluster.post(leader, "/v1/jobs/job-cut/cancel")
    assert refused.status_code == 503, refused.text
    assert "not stored" in refused.json()["message"]

    # And once ZooKeeper is back, the retried cancel is acknowledged and stored. (Retried as
    # the client does on 503: on a loaded machine the server may come back only after the
    # session expired, and the leader then answers 503 until it leads again.)
    restart_server(stoppable_zookeeper, 1)
    wait_until(lambda: leader.session.connected, 30, message="leader reconnected")

    def acknowledged() -> httpx.Response | None:
        answer = cluster.post(leader, "/v1/jobs/job-cut/cancel")
        assert answer.status_code in (202, 503), answer.text
        return answer if answer.status_code == 202 else None

    wait_until(acknowledged, 60, interval=0.2, message="the retried cancel acknowledged")
    data = cluster.data(status_path)
    assert data is not None
    assert decode_status(data, "job-cut").state is JobState.CANCELLING


def test_a_pointer_whose_create_answer_was_lost_is_taken_up_when_the_submit_is_retried(
    own_cluster: JobManagerCluster,
) -> None:
    """The create of a job's pointer landed but its answer was lost (the client saw 503 and
    retries): the retry finds the pointer, and the leader must run the job now, not leave it
    without a JobMaster until the next failover."""
    cluster = own_cluster
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    dispatcher = dispatcher_of(leader)
    spec = JobSpec(job_id="job-lost-answer")
    artifact = build_artifact("stw_test_pipeline.py", PIPELINE, spec.entrypoint)
    # Given the pointer written under the leader's fence, as its lost create would have
    JobGraphStore(leader.session, leader.blobs).put(
        dispatcher.fence, JobGraph(spec=spec, artifact=artifact, submitted_at=time.time())
    )
    assert cluster.get(leader, "/v1/jobs/job-lost-answer").status_code == 404
    # When the client's retry arrives
    retry = cluster.submit(leader, "job-lost-answer")
    # Then it hears that the job exists, and the job runs
    assert retry.status_code == 409, retry.text
    assert retry.json()["code"] == "job_exists"
    start, _ = tm.wait_command(leader, StartAttempt, "job-lost-answer")
    assert start.attempt == 1
