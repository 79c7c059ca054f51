"""End to end: within a queue a higher priority starts before an older job (issue 27 part 3),
on a TaskManager with a single slot (the rest of queue scheduling: test_queue_scheduling.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.queue_jobs import QUEUES, state_is, submit_ticking
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def queued(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    extra = {"scheduling.queues": QUEUES}
    with ProcessCluster(tmp_path, zk_quorum, cluster_id, extra=extra) as cluster:
        yield cluster


def test_within_a_queue_a_higher_priority_starts_before_an_older_job(
    queued: ProcessCluster, tmp_path: Path
) -> None:
    queued.start_jobmanager("jm-1")
    queued.start_taskmanager("tm-1", slots=1)
    queued.wait_ready(taskmanagers=1)
    with queued.client() as client:
        blocker = submit_ticking(client, tmp_path, "blocker")
        wait_until(lambda: state_is(client, blocker.job_id, JobState.RUNNING), 60)
        older = submit_ticking(client, tmp_path, "older-low")
        urgent = submit_ticking(client, tmp_path, "newer-high", priority=10)
        wait_until(
            lambda: "free slot" in (client.job(urgent.job_id).reason or ""),
            30,
            message=f"{client.job(urgent.job_id)!r} {client.job(older.job_id)!r}",
        )
        client.cancel(blocker.job_id)
        wait_until(lambda: state_is(client, urgent.job_id, JobState.RUNNING), 60)
        passed_over = client.job(older.job_id)
    assert passed_over.state is JobState.SCHEDULED
