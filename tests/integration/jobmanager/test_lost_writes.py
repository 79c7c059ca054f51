"""A write ZooKeeper acknowledged and later lost does not go unnoticed (issue 15).

ZooKeeper 3.8.0 lost a finished job's result in the chaos suite (docs/reliability.md, bug 3).
Such a loss cannot be caused on demand, so the test takes the result away where the loss would
show: just before the leader marks it CLEAN, on a real leader and a real ZooKeeper. The leader
then logs one error naming ZooKeeper, does not retry that cleanup for ever, and goes on with
the next job's.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.ha.fencing import Fence
from support import wait_until

pytestmark = pytest.mark.zookeeper


def test_a_result_lost_by_zookeeper_is_an_error_naming_it_and_not_retried(
    cluster: JobManagerCluster, caplog: pytest.LogCaptureFixture
) -> None:
    leader = cluster.start_leader("jm-1")
    results = dispatcher_of(leader).stores.results
    mark_clean = results.mark_clean

    def losing_mark_clean(fence: Fence, job_id: str) -> Any:
        if job_id == "job-lost":  # ZooKeeper loses the acknowledged result
            cluster.zk.delete(cluster.layout.result(job_id))
        return mark_clean(fence, job_id)

    results.mark_clean = losing_mark_clean  # type: ignore[method-assign]
    caplog.set_level(logging.INFO, logger="steward")
    # When a job ends (cancelled while it waits for a slot) and its result is lost
    cluster.submitted(leader, "job-lost")
    assert cluster.post(leader, "/v1/jobs/job-lost/cancel").status_code in (200, 202)
    wait_until(
        lambda: any(
            "result lost by zookeeper job=job-lost" in r.getMessage() for r in caplog.records
        ),
        10,
        "the leader says the result is lost",
    )
    # Then it is one error that names ZooKeeper and what to check
    (error,) = [r for r in caplog.records if "result lost by zookeeper" in r.getMessage()]
    assert error.levelno == logging.ERROR
    assert "ZooKeeper lost an acknowledged write" in error.getMessage()
    assert "steward doctor" in error.getMessage()
    # And the cleanup thread goes on with the next job, not retrying the lost one (a retry is
    # logged at once, before the next job is taken)
    cluster.submitted(leader, "job-next")
    assert cluster.post(leader, "/v1/jobs/job-next/cancel").status_code in (200, 202)
    cluster.wait_result_clean(leader, "job-next")
    retries = [r for r in caplog.records if "cleanup failed job=job-lost" in r.getMessage()]
    assert retries == []
    # And the metric says it, for an alert
    registry = dispatcher_of(leader).term.metrics.registry
    assert registry.get_sample_value("steward_zookeeper_lost_writes_total") == 1
    # And the rest of the lost job's HA data is gone
    assert not cluster.exists(cluster.layout.jobgraph("job-lost"))
    assert not cluster.exists(cluster.layout.job("job-lost"))
