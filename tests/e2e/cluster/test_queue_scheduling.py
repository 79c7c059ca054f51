"""End to end: queues, priorities and max_concurrent (issue 27 part 3), with real processes.

A queue at its maximum leaves its jobs waiting in SCHEDULED, their reason saying so, while
another queue's job starts on a free slot; a job held by its name's ``max_concurrent`` says
so too; within a queue a higher priority starts first; a submission naming an unknown queue
is refused with 400 and nothing is stored. A real JobManager and TaskManager, real attempts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.ticking import write_pipeline
from steward.client import Client
from steward.errors import JobNotFoundError, JobRejectedError
from steward.testing.credentials import auth_headers, kit_admin_token
from steward.testing.processes import ProcessCluster
from steward.wire.rest import JobView
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

QUEUES = "capped:guarantee=0.25,maximum=0.25;open:guarantee=0.5"
LONG = ["100000", "0.2"]
"""A ticking attempt that runs until it is cancelled."""


@pytest.fixture
def queued(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id, extra={"scheduling.queues": QUEUES})
    try:
        yield cluster
    finally:
        cluster.stop()


def _state(client: Client, job_id: str, state: JobState) -> JobView | None:
    view = client.job(job_id)
    return view if view.state is state else None


def _submit(client: Client, tmp_path: Path, name: str, **options: object) -> JobView:
    truth = str(tmp_path / f"{name}.log")
    return client.submit(write_pipeline(tmp_path), args=[truth, *LONG], name=name, **options)  # type: ignore[arg-type]


def test_a_queue_at_its_maximum_waits_saying_so_while_another_queue_starts(
    queued: ProcessCluster, tmp_path: Path
) -> None:
    queued.start_jobmanager("jm-1")
    queued.start_taskmanager("tm-1", slots=4)  # capped: 25 % of 4 = 1 slot
    queued.wait_ready(taskmanagers=1)
    with queued.client() as client:
        first = _submit(client, tmp_path, "capped-1", queue="capped")
        wait_until(lambda: _state(client, first.job_id, JobState.RUNNING), 60)
        second = _submit(client, tmp_path, "capped-2", queue="capped")
        held = wait_until(
            lambda: (v := client.job(second.job_id)).reason and "maximum share" in v.reason and v,
            30,
            message="the capped queue's second job says its queue is at its maximum",
        )
        other = _submit(client, tmp_path, "open-1", queue="open")
        wait_until(lambda: _state(client, other.job_id, JobState.RUNNING), 60)
        waiting = client.job(second.job_id)
        queues = {q.name: q for q in client.queues().queues}
    assert held.state is JobState.SCHEDULED
    assert "queue 'capped' is at its maximum share" in (held.reason or "")
    assert waiting.state is JobState.SCHEDULED, "a free slot must not go past the maximum"
    assert (queues["capped"].running, queues["capped"].waiting) == (1, 1)
    assert (queues["open"].running, queues["open"].slots_used) == (1, 1)
    queued.check_alive()


def test_a_job_held_by_max_concurrent_waits_saying_so(
    queued: ProcessCluster, tmp_path: Path
) -> None:
    queued.start_jobmanager("jm-1")
    queued.start_taskmanager("tm-1", slots=4)
    queued.wait_ready(taskmanagers=1)
    with queued.client() as client:
        first = _submit(client, tmp_path, "nightly", max_concurrent=1)
        wait_until(lambda: _state(client, first.job_id, JobState.RUNNING), 60)
        second = _submit(client, tmp_path, "nightly", max_concurrent=1, job_id="nightly-2")
        held = wait_until(
            lambda: (v := client.job(second.job_id)).reason and "max_concurrent" in v.reason and v,
            30,
            message="the second job of the name says max_concurrent holds it",
        )
        client.cancel(first.job_id)
        wait_until(lambda: _state(client, second.job_id, JobState.RUNNING), 60)
    assert held.state is JobState.SCHEDULED
    assert "held by max_concurrent=1" in (held.reason or "")


def test_within_a_queue_a_higher_priority_starts_before_an_older_job(
    queued: ProcessCluster, tmp_path: Path
) -> None:
    queued.start_jobmanager("jm-1")
    queued.start_taskmanager("tm-1", slots=1)
    queued.wait_ready(taskmanagers=1)
    with queued.client() as client:
        blocker = _submit(client, tmp_path, "blocker")
        wait_until(lambda: _state(client, blocker.job_id, JobState.RUNNING), 60)
        older = _submit(client, tmp_path, "older-low")
        urgent = _submit(client, tmp_path, "newer-high", priority=10)
        wait_until(
            lambda: "free slot" in (client.job(urgent.job_id).reason or ""),
            30,
            message=f"{client.job(urgent.job_id)!r} {client.job(older.job_id)!r}",
        )
        client.cancel(blocker.job_id)
        wait_until(lambda: _state(client, urgent.job_id, JobState.RUNNING), 60)
        passed_over = client.job(older.job_id)
    assert passed_over.state is JobState.SCHEDULED


def test_an_unknown_queue_is_refused_with_400_and_nothing_is_stored(
    queued: ProcessCluster, tmp_path: Path
) -> None:
    leader = queued.start_jobmanager("jm-1")
    queued.wait_ready(taskmanagers=0)
    with queued.client() as client:
        with pytest.raises(JobRejectedError, match="no queue 'nope'"):
            _submit(client, tmp_path, "lost", queue="nope", job_id="lost-1")
        with pytest.raises(JobNotFoundError):
            client.job("lost-1")
        assert client.jobs() == []
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
