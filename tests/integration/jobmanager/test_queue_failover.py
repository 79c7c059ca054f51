"""After a failover, the attempts the new leader adopts count against their queue (issue 22).

A scheduling pass no longer counts the running jobs' slots itself: the job table keeps them
as attempts are placed, adopted and end (``leader/slot_use.py``). An adopted attempt that the
table failed to count would let the new leader start more of its queue's jobs than the
queue's maximum allows.
"""

from __future__ import annotations

from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of

from steward.testing.waiting import wait_until
from steward.wire.heartbeat import StartAttempt
from steward.wire.records import ExecutionLease

pytestmark = pytest.mark.zookeeper

QUEUES = {"scheduling.queues": "capped:guarantee=0.25,maximum=0.5"}
"""On one TaskManager of 4 slots: the capped queue may hold 2."""


def test_adopted_attempts_hold_their_queue_s_slots_under_the_next_leader(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **QUEUES)
    tm = PretendTaskManager(cluster, "tm-1", slots=4).register()
    for job_id in ("capped-1", "capped-2"):
        cluster.submitted(leader, job_id, queue="capped")
        lease = ExecutionLease(taskmanager=tm.id, attempt=1, epoch=1)  # its attempt runs
        tm.zk.create(cluster.layout.execution(job_id), lease.to_json(), ephemeral=True)
    leader.stop()

    successor = cluster.start_leader("jm-2", **QUEUES)
    assert dispatcher_of(successor).recovery_summary["adopted"] == 2
    capped = wait_until(
        lambda: _queue(cluster, successor, "capped", slots_used=2),
        15,
        message="the new leader counts the adopted attempts against their queue",
    )
    assert capped["running"] == 2

    cluster.submitted(successor, "capped-3", queue="capped")
    held = cluster.wait_state(successor, "capped-3", "SCHEDULED")
    wait_until(
        lambda: (
            "queue 'capped' is at its maximum share"
            in (cluster.job(successor, "capped-3")["reason"] or "")
        ),
        15,
        message=f"the third capped job waits for its queue's maximum (was: {held['reason']})",
    )
    starts = [c for c in tm.heartbeat(successor).commands if isinstance(c, StartAttempt)]
    assert starts == []  # no start command for it either


def _queue(
    cluster: JobManagerCluster, manager: Any, name: str, *, slots_used: int
) -> dict[str, Any] | None:
    answer = cluster.get(manager, "/v1/queues")
    assert answer.status_code == 200, answer.text
    queue: dict[str, Any] = next(q for q in answer.json()["queues"] if q["name"] == name)
    return queue if queue["slots_used"] == slots_used else None
