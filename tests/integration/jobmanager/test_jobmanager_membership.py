"""How the leader learns that a TaskManager restarted under its id, when the watch does not say.

A network chaos run left four jobs RUNNING for ever: their TaskManager restarted (twice, within
seconds) while the leader's link to ZooKeeper flapped. The watch fired once for both changes;
the scheduling pass's membership read failed (connection loss); the pass was retried, but the
change it had taken was not, so the leader kept the old incarnation's attempts on a TaskManager
that no longer knew them. A read that fails is now retried (first test); and since kazoo's
children watch, after a reconnection, compares the children's names (so a TaskManager that
left and came back while the leader was disconnected looks unchanged to it), the leader also
reads the membership again after every reconnection (second test) and as soon as a heartbeat
names a session other than the one it knows for that id (third test). The read's failure is
played here by the test (a real server cannot be made to fail exactly one read at exactly that
moment), and so is the watch that does not tell; the registration, the restart, the
reconnection and the heartbeats are real.
"""

from __future__ import annotations

from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of, report

from steward.errors import CoordinationError
from steward.jobmanager.leader import membership as membership_module
from steward.jobmanager.manager import JobManager
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


def _silence_the_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader to be started hears no membership change from its watch, as when kazoo
    swallowed one: only its recovery's read, and what the test exercises, tell it."""
    monkeypatch.setattr(membership_module, "watch_members", lambda _session, _on_change: None)


def _running_on_a_pretend_taskmanager(
    cluster: JobManagerCluster, job_id: str, *, says_session: bool
) -> tuple[JobManager, PretendTaskManager]:
    old = PretendTaskManager(cluster, "tm-1", says_session=says_session).register()
    leader = cluster.start_leader("jm-1")  # its recovery reads the membership: tm-1, old
    cluster.submitted(leader, job_id)
    first, _ = old.wait_command(leader, StartAttempt, job_id)
    old.heartbeat(leader, report(first, AttemptPhase.RUNNING))
    cluster.wait_state(leader, job_id, "RUNNING")
    return leader, old


def _swap(old: PretendTaskManager, *, says_session: bool) -> PretendTaskManager:
    new = PretendTaskManager(old.cluster, old.id, says_session=says_session)
    swap = new.zk.transaction()
    swap.delete(old.path)
    swap.create(new.path, new.registration(), ephemeral=True)
    assert all(result is True or isinstance(result, str) for result in swap.commit())
    return new


def _replaced(cluster: JobManagerCluster, leader: JobManager, new: PretendTaskManager) -> None:
    def restarted() -> dict[str, Any] | None:
        new.heartbeat(leader)  # it runs nothing: a new process
        job = cluster.job(leader, "job-reborn")
        return job if job["state"] == "RESTARTING" else None

    view = wait_until(restarted, 10, message="the old incarnation's attempt is lost")
    assert view["attempts"][0]["state"] == "LOST"
    assert view["attempts"][0]["cause"]["type"] == "steward.TaskManagerLost"
    second, _ = new.wait_command(leader, StartAttempt, "job-reborn")
    assert second.attempt == 2


def test_a_restart_is_noticed_after_a_reconnection_the_watch_slept_through(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    _silence_the_watch(monkeypatch)
    leader, old = _running_on_a_pretend_taskmanager(cluster, "job-reborn", says_session=False)
    new = _swap(old, says_session=False)
    # Nothing tells the leader yet: its heartbeats name no session, the watch is silent.
    new.heartbeat(leader)
    assert cluster.job(leader, "job-reborn")["state"] == "RUNNING"

    assert dispatcher_of(leader).session.drop_connection("the test drops it")
    _replaced(cluster, leader, new)


def test_a_heartbeat_from_another_incarnation_makes_the_leader_read_the_membership(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    _silence_the_watch(monkeypatch)
    leader, old = _running_on_a_pretend_taskmanager(cluster, "job-reborn", says_session=True)
    new = _swap(old, says_session=True)
    _replaced(cluster, leader, new)
