"""A scheduling pass over a backlog that cannot move looks only at the jobs new to it (issue 22).

While no TaskManager has a free slot a full pass gave every waiting job the reason it already
had, walking all of them under the job table's lock (about 20 ms at 10,000, a submission
waiting behind it). Now such a pass looks at the jobs that arrived since the last one; a
freed slot makes the next pass full, so the oldest waiting job still gets it. And a new job
is stored with the reason such a job is given, so no pass writes its record again.
"""

from __future__ import annotations

from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of, report

from steward.jobmanager.leader import backlog
from steward.wire.heartbeat import StartAttempt
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

WAITING = "waiting for 1 free slot(s) on one TaskManager (1 registered)"


def _waits(cluster: JobManagerCluster, leader: Any, job_id: str) -> None:
    wait_until(
        lambda: cluster.job(leader, job_id)["reason"] == WAITING,
        15,
        message=f"{job_id} waits for a slot, and says so",
    )


def _counted(cluster: JobManagerCluster, leader: Any, waiting: int) -> None:
    wait_until(
        lambda: _waiting_in_default_queue(cluster, leader) == waiting,
        15,
        message=f"a pass counted {waiting} jobs waiting",
    )


def _waiting_in_default_queue(cluster: JobManagerCluster, leader: Any) -> int:
    queues = cluster.get(leader, "/v1/queues").json()["queues"]
    return int(next(q for q in queues if q["name"] == "default")["waiting"])


def test_a_full_cluster_s_passes_look_only_at_new_jobs_and_a_freed_slot_goes_to_the_oldest(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backlog, "FULL_EVERY", 3600.0)  # no periodic full pass in this test
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1", slots=1).register()
    cluster.submitted(leader, "job-first")
    start, _ = tm.wait_command(leader, StartAttempt, "job-first")
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))  # the only slot is taken

    backlogged = [f"job-{n:02d}" for n in range(12)]
    for job_id in backlogged:
        cluster.submitted(leader, job_id)
    for job_id in backlogged:
        _waits(cluster, leader, job_id)
    _counted(cluster, leader, 12)
    scheduler = dispatcher_of(leader)._scheduler

    cluster.submitted(leader, "job-late")
    _waits(cluster, leader, "job-late")
    _counted(cluster, leader, 13)
    # The pass that counted it looked at it alone (or a later one at nothing new).
    assert scheduler.looked_at <= 1
    passes = scheduler.passes
    wait_until(lambda: scheduler.passes > passes, 15, message="one more pass, whole")
    # Stored with the reason such a job waits for, its status record is never written again.
    _record, stat = cluster.zk.get(cluster.layout.job_status("job-late"))
    assert stat.version == 0

    # The slot frees: the next pass is full, and the oldest waiting job gets it.
    done = FinishedEvent(value={"rows": 1})
    start_next, _ = tm.wait_command(
        leader, StartAttempt, "job-00", report(start, AttemptPhase.ENDED, done)
    )
    assert start_next.attempt == 1
    _counted(cluster, leader, 12)  # the placed one no longer waits


HOOKED = b"def initialize(ctx):\n    return None\n\ndef main(ctx):\n    return 1\n"


def test_a_job_whose_initialize_hook_ends_in_a_full_cluster_is_told_why_it_waits(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle all along (its hook ran meanwhile), the job is no arrival: the table tells the
    next pass to look at it, and the backlog pass gives it its own reason at once."""
    monkeypatch.setattr(backlog, "FULL_EVERY", 3600.0)  # no periodic full pass in this test
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1", slots=1).register()
    cluster.submitted(leader, "job-first")
    start, _ = tm.wait_command(leader, StartAttempt, "job-first")
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    _counted(cluster, leader, 0)

    cluster.submitted(leader, "job-wide", source=HOOKED, slots=2)
    wait_until(
        lambda: (
            cluster.job(leader, "job-wide")["reason"]
            == "waiting for a TaskManager with 2 slot(s) (largest registered: 1)"
        ),
        30,
        message="the hooked job says why it waits once its hook ended",
    )
