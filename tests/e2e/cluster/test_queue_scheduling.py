"""End to end: queues, priorities and max_concurrent (issue 27 part 3), with real processes.

A queue at its maximum leaves its jobs waiting in SCHEDULED, their reason saying so, while
another queue's job starts on a free slot; a job held by its name's ``max_concurrent`` says
so too; within a queue a higher priority starts first; a submission naming an unknown queue
is refused with 400 and nothing is stored. A real JobManager and TaskManager, real attempts.

The tests share one cluster (a TaskManager with four slots): each cancels the jobs it started
and waits for them to end, so the next finds every slot free. Priorities need a single slot:
test_queue_priority.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.cluster.queue_jobs import QUEUES, state_is, submit_ticking
from e2e.module_clusters import module_cluster
from steward.client import Client
from steward.errors import JobNotFoundError, JobRejectedError
from steward.testing.credentials import auth_headers, kit_admin_token
from steward.testing.processes import ProcessCluster
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    extra = {"scheduling.queues": QUEUES}
    with module_cluster(tmp_path_factory, zookeeper, "queues", slots=4, extra=extra) as cluster:
        yield cluster


def _cancel_all(client: Client, *job_ids: str) -> None:
    """Cancel ``job_ids`` and wait for each to end: the shared cluster's slots are free again."""
    for job_id in job_ids:
        client.cancel(job_id)
    for job_id in job_ids:
        assert client.wait(job_id, timeout=60).state.value == "CANCELED"


def test_a_queue_at_its_maximum_waits_saying_so_while_another_queue_starts(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    # capped: 25 % of the 4 slots = 1 slot
    with cluster.client() as client:
        first = submit_ticking(client, tmp_path, "capped-1", queue="capped")
        wait_until(lambda: state_is(client, first.job_id, JobState.RUNNING), 60)
        second = submit_ticking(client, tmp_path, "capped-2", queue="capped")
        held = wait_until(
            lambda: (v := client.job(second.job_id)).reason and "maximum share" in v.reason and v,
            30,
            message="the capped queue's second job says its queue is at its maximum",
        )
        other = submit_ticking(client, tmp_path, "open-1", queue="open")
        wait_until(lambda: state_is(client, other.job_id, JobState.RUNNING), 60)
        waiting = client.job(second.job_id)
        queues = {q.name: q for q in client.queues().queues}
        _cancel_all(client, first.job_id, second.job_id, other.job_id)
    assert held.state is JobState.SCHEDULED
    assert "queue 'capped' is at its maximum share" in (held.reason or "")
    assert waiting.state is JobState.SCHEDULED, "a free slot must not go past the maximum"
    assert (queues["capped"].running, queues["capped"].waiting) == (1, 1)
    assert (queues["open"].running, queues["open"].slots_used) == (1, 1)


def test_a_job_held_by_max_concurrent_waits_saying_so(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    with cluster.client() as client:
        first = submit_ticking(client, tmp_path, "nightly", max_concurrent=1)
        wait_until(lambda: state_is(client, first.job_id, JobState.RUNNING), 60)
        second = submit_ticking(client, tmp_path, "nightly", max_concurrent=1, job_id="nightly-2")
        held = wait_until(
            lambda: (v := client.job(second.job_id)).reason and "max_concurrent" in v.reason and v,
            30,
            message="the second job of the name says max_concurrent holds it",
        )
        client.cancel(first.job_id)
        wait_until(lambda: state_is(client, second.job_id, JobState.RUNNING), 60)
        _cancel_all(client, second.job_id)
    assert held.state is JobState.SCHEDULED
    assert "held by max_concurrent=1" in (held.reason or "")


def test_an_unknown_queue_is_refused_with_400_and_nothing_is_stored(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    leader = cluster.leader()
    assert leader is not None
    with cluster.client() as client:
        before = {job.job_id for job in client.jobs()}
        with pytest.raises(JobRejectedError, match="no queue 'nope'"):
            submit_ticking(client, tmp_path, "lost", queue="nope", job_id="lost-1")
        with pytest.raises(JobNotFoundError):
            client.job("lost-1")
        assert {job.job_id for job in client.jobs()} == before
    body = {
        "spec": {"job_id": "lost-2", "queue": "nope"},
        "artifact": {"filename": "p.py", "data_b64": "ZGVmIG1haW4oY3R4KTogcGFzcwo="},
    }
    answer = httpx.post(
        leader.address + "/v1/jobs", json=body, headers=auth_headers(kit_admin_token())
    )
    assert answer.status_code == 400, answer.text
    assert "no queue 'nope'" in answer.json()["message"]
    assert "traceback" not in answer.text.lower()
