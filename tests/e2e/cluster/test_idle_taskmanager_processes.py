"""Idle holds with real processes (issue 22): an idle TaskManager's heartbeat held for
``heartbeat.idle-hold``, and the bounds that must not move with it.

The kit's clusters heartbeat every 200 ms with a 4 s session, and keep the default idle hold
(10 s). An idle TaskManager's last heartbeat then ages past what one poll per interval allows;
frozen in its hold it is still dropped when its session expires (a held request proves
nothing); and when its leader freezes in the hold, the next leader's command still reaches it at
once (the poll held by the frozen one is left behind).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.ticking import read_truth, write_pipeline
from steward.client import Client
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 4.0
"""The kit's session timeout."""
HELD = 2.0
"""A heartbeat age that polls every 200 ms never reach: the heartbeat is in an idle hold."""


def taskmanagers(cluster: ProcessCluster, jobmanager: Proc) -> dict[str, Any]:
    """The TaskManagers ``jobmanager`` lists (none while it answers 503: taking over)."""
    view = cluster.get(jobmanager, "/v1/cluster")
    return {tm["id"]: tm for tm in view.get("taskmanagers", [])}


def leads(cluster: ProcessCluster, jobmanager: Proc) -> bool:
    leader = cluster.get(jobmanager, "/v1/cluster").get("leader") or {}
    return bool(leader.get("id") == jobmanager.id)


def age(cluster: ProcessCluster, leader: Proc) -> float | None:
    found: float | None = taskmanagers(cluster, leader).get("tm-1", {}).get("heartbeat_age")
    return found


def in_idle_hold(cluster: ProcessCluster, leader: Proc) -> None:
    def held() -> bool:
        last = age(cluster, leader)
        return last is not None and last > HELD

    wait_until(held, 30.0, "tm-1's heartbeat held past two seconds", interval=0.1)


def fresh_idle_hold(cluster: ProcessCluster, leader: Proc) -> None:
    """Return just after tm-1's next idle poll arrived: held for the next 10 s."""
    in_idle_hold(cluster, leader)

    def fresh() -> bool:
        last = age(cluster, leader)
        return last is not None and last < 0.5

    wait_until(fresh, 30.0, "tm-1's next poll", interval=0.05)


def idle_one_of_each(cluster: ProcessCluster) -> Proc:
    """jm-1 leading tm-1, whose heartbeat is in an idle hold; jm-1 returned."""
    cluster.start_one_of_each()
    leader = cluster.leader()
    assert leader is not None
    in_idle_hold(cluster, leader)
    return leader


def proc(cluster: ProcessCluster, proc_id: str) -> Proc:
    return next(p for p in cluster.procs if p.id == proc_id)


def test_an_idle_taskmanager_heartbeat_is_held_longer_than_the_interval(
    process_cluster: ProcessCluster,
) -> None:
    leader = idle_one_of_each(process_cluster)  # at 200 ms polls, its age stays under 0.4 s

    assert taskmanagers(process_cluster, leader)["tm-1"]["heartbeat_age"] < 10.0 + 2.0


def test_a_taskmanager_frozen_in_its_idle_hold_is_dropped_when_its_session_expires(
    process_cluster: ProcessCluster,
) -> None:
    leader = idle_one_of_each(process_cluster)
    taskmanager = proc(process_cluster, "tm-1")

    taskmanager.signal(signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        wait_until(
            lambda: "tm-1" not in taskmanagers(process_cluster, leader),
            SESSION_TIMEOUT + 10.0,
            "the frozen TaskManager dropped",
            interval=0.1,
        )
        # Its session's end, not its held heartbeat's (up to 10 s), decides.
        assert time.monotonic() - frozen < SESSION_TIMEOUT + 5.0
    finally:
        taskmanager.signal(signal.SIGCONT)


def test_a_command_of_the_next_leader_reaches_a_taskmanager_held_by_a_frozen_one(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    wait_until(process_cluster.leader, 30.0, "jm-1 leads")
    standby = process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    old = process_cluster.wait_ready(taskmanagers=1)
    assert old.id == "jm-1"
    fresh_idle_hold(process_cluster, old)

    old.signal(signal.SIGSTOP)  # the TaskManager's poll stays held (its timeout: 15 s from now)
    try:
        wait_until(
            lambda: (
                leads(process_cluster, standby) and "tm-1" in taskmanagers(process_cluster, standby)
            ),
            SESSION_TIMEOUT + 30.0,
            "jm-2 leads and knows tm-1",
            interval=0.1,
        )
        truth = tmp_path / "truth"
        client = Client(
            [standby.address],
            timeout=30.0,
            config=process_cluster.rest_config(),
            token=kit_admin_token(),
        )
        with client:
            submitted = time.monotonic()
            client.submit(write_pipeline(tmp_path), args=[str(truth), "600", "0.1"])
            wait_until(lambda: read_truth(truth), 30.0, "the attempt started", interval=0.05)
        # At once (a runner's start under load included), not once the poll held by the frozen
        # leader times out, 15 s after the freeze: about 10 s after jm-2 took over.
        took = time.monotonic() - submitted
        assert took < 8.0, f"the attempt started {took:.1f}s after its submission"
    finally:
        old.signal(signal.SIGKILL)
