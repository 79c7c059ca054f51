"""A start command is judged never-taken by heartbeats built after it, not by arrival (issue 23,
item 6b).

A TaskManager sends heartbeats from two threads, and a leader whose table lock is held for
seconds (slow ZooKeeper) may take an old one up after a newer one collected a start. The old
heartbeat cannot mention an attempt admitted after it was built, so it must not expire it: the
heartbeat's ``seq`` and ``settled`` say what it can know.
"""

from __future__ import annotations

import pytest
from jobmanager_harness import (
    HEARTBEAT_INTERVAL,
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.wire.heartbeat import CancelAttempt, StartAttempt
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

HORIZON = 2 * HEARTBEAT_INTERVAL + 5.0
"""How long the leader waits for a collected start to be mentioned (heartbeats.py)."""


def _past_the_horizon(cluster: JobManagerCluster, leader: object, job_id: str) -> None:
    dispatcher = dispatcher_of(leader)  # type: ignore[arg-type]

    def past() -> bool:
        with dispatcher.table.lock:
            current = dispatcher.table.jobs[job_id].current
            assert current is not None and current.collected_at is not None
            return dispatcher.term.monotonic() - current.collected_at > HORIZON

    wait_until(past, HORIZON + 5.0, message=f"{job_id}'s start collected {HORIZON}s ago")


def test_a_heartbeat_built_before_the_start_was_admitted_does_not_expire_it(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-d", restart_strategy={"kind": "none"})
    # The poller's heartbeat, built now, will reach the leader's table only much later.
    early = tm.beat()
    # The notifier's heartbeats meanwhile: one of them collects the start; its reply is handled.
    start, _ = tm.wait_command(leader, StartAttempt, "job-d")
    _past_the_horizon(cluster, leader, "job-d")

    tm.heartbeat(leader, beat=early)

    reply = tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    assert [c for c in reply.commands if isinstance(c, CancelAttempt)] == []
    view = cluster.wait_state(leader, "job-d", "RUNNING")
    assert [(a["number"], a["state"]) for a in view["attempts"]] == [(1, "RUNNING")]
    assert view["failures"] == 0


def test_a_start_no_heartbeat_built_after_its_reply_mentions_is_still_expired(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-e", restart_strategy={"kind": "none"})
    tm.wait_command(leader, StartAttempt, "job-e")
    _past_the_horizon(cluster, leader, "job-e")
    dispatcher = dispatcher_of(leader)
    with dispatcher.table.lock:
        collected = dispatcher.table.jobs["job-e"].current
    # Built after the collecting heartbeat's reply was handled (or given up: the reply was
    # lost), yet it does not mention the attempt: the TaskManager never took it.
    tm.heartbeat(leader)

    # Then the start is expired: the job waits again, no failure counted. The scheduler may
    # place it again at once (the TaskManager's slot is free), as a new deployment of the
    # same attempt number: a loaded run read the view only after that.
    def expired() -> bool:
        with dispatcher.table.lock:
            return dispatcher.table.jobs["job-e"].current is not collected

    wait_until(expired, 10.0, message="the collected start expired")
    view = cluster.job(leader, "job-e")
    assert view["state"] == "SCHEDULED", view["state"]
    assert view["failures"] == 0
    assert [a["number"] for a in view["attempts"]] in ([], [1])
