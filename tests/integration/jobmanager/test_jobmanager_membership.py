"""The leader's membership refresh when ZooKeeper refuses a read at the wrong moment.

A network chaos run left four jobs RUNNING for ever: their TaskManager restarted (twice, within
seconds) while the leader's link to ZooKeeper flapped. The watch fired once for both changes;
the scheduling pass's membership read failed (connection loss); the pass was retried, but the
change it had taken was not, so the leader kept the old incarnation's attempts on a TaskManager
that no longer knew them. The read's failure is played here by the test (a real server cannot
be made to fail exactly one read at exactly that moment); the registration, the restart and
the heartbeats are real.
"""

from __future__ import annotations

from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of, report

from steward.errors import CoordinationError
from steward.wire.heartbeat import StartAttempt
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper


def test_a_restart_whose_first_membership_read_failed_still_loses_the_old_attempt(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-reborn")
    old = PretendTaskManager(cluster, "tm-1").register()
    first, _ = old.wait_command(leader, StartAttempt, "job-reborn")
    old.heartbeat(leader, report(first, AttemptPhase.RUNNING))
    cluster.wait_state(leader, "job-reborn", "RUNNING")

    membership = dispatcher_of(leader)._membership
    read_members = membership._read_members
    failures: list[str] = []

    def flaky() -> Any:
        if not failures:
            failures.append("refused")
            raise CoordinationError("connection lost (played by the test)")
        return read_members()

    monkeypatch.setattr(membership, "_read_members", flaky)
    # The same id, another process: the old session's node goes and the new one's comes in
    # one transaction, so the leader's watch fires once, as it does for a leader that was
    # cut from ZooKeeper while both happened.
    new = PretendTaskManager(cluster, "tm-1")
    swap = new.zk.transaction()
    swap.delete(old.path)
    swap.create(new.path, new.registration(), ephemeral=True)
    assert all(result is True or isinstance(result, str) for result in swap.commit())
    wait_until(lambda: failures, 10, message="the leader tried to read the membership")

    restarted = cluster.wait_state(leader, "job-reborn", "RESTARTING")
    assert restarted["attempts"][0]["state"] == "LOST"
    assert restarted["attempts"][0]["cause"]["type"] == "steward.TaskManagerLost"
    second, _ = new.wait_command(leader, StartAttempt, "job-reborn")
    assert second.attempt == 2
