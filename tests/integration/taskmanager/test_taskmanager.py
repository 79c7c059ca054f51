"""The TaskManager in-process against a scripted leader: registration, starting attempts behind
their leases, reporting them until acknowledged, refusing what it must refuse, cancelling.

Given a real ZooKeeper and a ScriptedLeader (real election, fake JobManager), when the leader
sends commands through heartbeat replies, then the TaskManager runs real runner processes and
reports what the heartbeat contract says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from ha_harness import expire_session
from rig import Rig
from scripted_leader import open_gate, start_command

from steward.config import Configuration
from steward.ha.session import Session
from steward.taskmanager.manager import SELF_FENCED_ERROR, TaskManager
from steward.wire.heartbeat import CancelAttempt, Rejection
from steward.wire.records import TaskManagerInfo
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper


def registered(session: Session, tm_id: str) -> TaskManagerInfo | None:
    path = session.layout.taskmanager(tm_id)
    if session.client.exists(path) is None:
        return None
    return TaskManagerInfo.from_json(session.client.get(path)[0])


def test_registers_with_its_address_and_slots_and_deregisters_on_stop(
    tm_config: Callable[..., Configuration], tm_session: Callable[..., Session]
) -> None:
    observer = tm_session("observer")
    manager = TaskManager(tm_config(), "tm-reg", address="host-a")
    manager.start()
    try:
        info = registered(observer, "tm-reg")
        assert info == TaskManagerInfo(address="host-a", slots=2, http_address=manager.http.address)
        # Its HTTP port (attempts' logs) answers at the address it registered.
        assert info is not None and info.http_address is not None
        health = httpx.get(info.http_address + "/healthz", timeout=5).json()
        assert health == {"status": "ok", "id": "tm-reg", "role": "taskmanager"}
    finally:
        manager.stop()
    assert registered(observer, "tm-reg") is None


def test_a_restarted_id_waits_for_the_old_sessions_node_to_vanish(
    tm_config: Callable[..., Configuration], tm_session: Callable[..., Session]
) -> None:
    old = tm_session("old-tm")
    path = old.layout.taskmanager("tm-dup")
    old.client.create(path, TaskManagerInfo(address="old", slots=1).to_json(), ephemeral=True)
    manager = TaskManager(tm_config(), "tm-dup", address="new")
    starting = threading.Thread(target=manager.start, daemon=True)
    starting.start()
    try:
        starting.join(timeout=1.0)
        assert starting.is_alive(), "start must wait while the old node lives"

        old.close()  # the old process's session ends

        starting.join(timeout=20.0)
        assert not starting.is_alive()
        info = registered(tm_session("observer"), "tm-dup")
        assert info is not None and info.address == "new"
    finally:
        starting.join(timeout=20.0)
        manager.stop()


def test_an_attempt_runs_behind_its_lease_and_is_forgotten_once_acknowledged(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    leader.ack_outcomes = False
    manager = rig.taskmanager("tm-1")
    gate = tmp_path / "gate"
    observer = rig.leases("observer")

    leader.command(start_command(rig.blobs, "job-a", leader.epoch, args=[str(gate), "checkpoint"]))

    running = leader.wait_phase("job-a", AttemptPhase.RUNNING)
    assert running.pid is not None and running.started_at is not None
    lease = observer.held("job-a")
    assert lease is not None and (lease.taskmanager, lease.attempt) == ("tm-1", 1)
    report = leader.wait_report(lambda r: r.progress is not None, "job-a")
    assert report.progress == {"waiting": str(gate), "pid": running.pid}
    assert [c.seq for c in leader.reports("job-a")[-1].checkpoints] in ([1], [])

    gate.touch()

    ended = leader.wait_phase("job-a", AttemptPhase.ENDED)
    assert isinstance(ended.outcome, FinishedEvent)
    assert ended.outcome.value == {"done": "job-a", "attempt": 1}
    wait_until(lambda: observer.held("job-a") is None, 10, message="lease released")
    released = leader.wait_report(lambda r: r.lease_released, "job-a")
    assert released.outcome == ended.outcome
    assert manager.attempts.get("job-a", 1) is not None, "kept until the outcome is acked"

    seen = len(leader.heartbeats)
    leader.ack_outcomes = True

    wait_until(lambda: leader.forgotten("job-a", seen + 1), 10, message="forgotten")
    assert manager.attempts.get("job-a", 1) is None
    assert (tmp_path / "work" / "tm-1" / "job-a" / "1" / "runner.log").exists()


def test_checkpoints_are_numbered_and_kept_until_acknowledged(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    leader.ack_checkpoints = False
    rig.taskmanager("tm-1")
    gate = tmp_path / "gate"

    leader.command(start_command(rig.blobs, "job-c", leader.epoch, args=[str(gate), "checkpoint"]))

    report = leader.wait_report(lambda r: bool(r.checkpoints), "job-c")
    assert [c.seq for c in report.checkpoints] == [1]
    assert report.checkpoints[0].event.metadata["stage"] == "s1"
    seen = len(leader.heartbeats)
    leader.ack_checkpoints = True
    wait_until(
        lambda: any(
            r.job_id == "job-c" and not r.checkpoints
            for b in leader.heartbeats_since(seen + 1)
            for r in b.attempts
        ),
        10,
        message="acknowledged checkpoint dropped",
    )
    open_gate(leader, gate, "job-c")


def test_a_start_with_a_stale_epoch_is_refused_and_nothing_runs(tmp_path: Path, rig: Rig) -> None:
    bumper = rig.session("bumper")

    def bump() -> None:  # the epoch is leader/epoch's version: any write bumps it
        bumper.client.set(bumper.layout.leader_epoch, b"bumped")

    bump()  # so the leader's epoch is 2 and a command can carry an older one
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1")
    gate = str(tmp_path / "gate")

    # Older than the epoch its reply carries: refused without asking ZooKeeper.
    leader.command(start_command(rig.blobs, "job-old", leader.epoch - 1, args=[gate]))
    leader.wait_phase("job-old", AttemptPhase.REJECTED)
    # The leader's own epoch, but ZooKeeper's has moved on: the fenced lease creation fails.
    # The bump deposes the scripted leader's election too, sooner or later; its replies keep
    # the epoch it had, as a deposed leader that has not noticed yet would.
    leader.epoch_override = epoch = leader.epoch
    bump()
    leader.command(start_command(rig.blobs, "job-fenced", epoch, args=[gate]))

    for job in ("job-old", "job-fenced"):
        report = leader.wait_phase(job, AttemptPhase.REJECTED)
        assert report.rejection is Rejection.STALE_EPOCH, report
        assert report.rejection_message
        assert report.pid is None
        assert manager.leases.held(job) is None
    assert manager.executions.running() == {}


def test_a_start_whose_lease_is_held_is_refused_as_lease_held(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1")
    other = rig.leases("tm-other")
    other.acquire("job-b", 1, leader.epoch)

    leader.command(
        start_command(rig.blobs, "job-b", leader.epoch, args=[str(tmp_path / "g")], attempt=2)
    )

    report = leader.wait_phase("job-b", AttemptPhase.REJECTED, attempt=2)
    assert report.rejection is Rejection.LEASE_HELD
    assert "tm-other" in (report.rejection_message or "")
    assert manager.executions.running() == {}


def test_no_slot_and_repeated_starts(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1", **{"taskmanager.numberOfTaskSlots": "1"})
    gate = tmp_path / "gate"
    first = start_command(rig.blobs, "job-1", leader.epoch, args=[str(gate)])

    leader.command(first)
    leader.command(first)  # a repeat: idempotent
    leader.command(start_command(rig.blobs, "job-2", leader.epoch, args=[str(gate)]))

    leader.wait_phase("job-1", AttemptPhase.RUNNING)
    report = leader.wait_phase("job-2", AttemptPhase.REJECTED)
    assert report.rejection is Rejection.NO_SLOT
    assert len(manager.executions.running()) == 1
    open_gate(leader, gate, "job-1")


def test_a_job_graph_that_cannot_be_fetched_ends_the_attempt_without_a_lease(rig: Rig) -> None:
    leader = rig.scripted()
    rig.taskmanager("tm-1")
    command = start_command(rig.blobs, "job-x", leader.epoch, args=["-"])
    rig.blobs.delete(command.job_graph_blob)

    leader.command(command)

    report = leader.wait_phase("job-x", AttemptPhase.ENDED)
    assert isinstance(report.outcome, FailedEvent)
    assert report.outcome.error.type == "steward.errors.BlobMissingError"
    assert "missing" in report.outcome.error.message
    assert report.lease_released


def test_cancel_ends_the_attempt_as_cancelled_and_frees_the_lease(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    rig.taskmanager("tm-1")
    leader.command(start_command(rig.blobs, "job-k", leader.epoch, args=[str(tmp_path / "never")]))
    running = leader.wait_report(lambda r: r.progress is not None, "job-k")

    leader.command(CancelAttempt(job_id="job-k", attempt=1, epoch=leader.epoch, grace=5.0))

    ended = leader.wait_phase("job-k", AttemptPhase.ENDED)
    assert isinstance(ended.outcome, FailedEvent)
    assert ended.outcome.error.type == "steward.wire.runner_protocol.AttemptCancelled"
    assert running.pid is not None
    wait_until(lambda: not pid_alive(running.pid), 5, message="runner gone")
    wait_until(lambda: rig.leases("observer").held("job-k") is None, 10, message="lease released")


def test_a_lost_session_fences_and_a_new_session_registers_again(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1")
    observer = rig.session("observer")
    gate = str(tmp_path / "never")
    leader.command(start_command(rig.blobs, "job-l", leader.epoch, args=[gate]))
    leader.wait_phase("job-l", AttemptPhase.RUNNING)
    old_session = manager.session.session_id

    expire_session(manager.session)

    ended = leader.wait_phase("job-l", AttemptPhase.ENDED)
    assert isinstance(ended.outcome, FailedEvent)
    assert ended.outcome.error.type == SELF_FENCED_ERROR
    assert "lost" in ended.outcome.error.message

    def registered_by_new_session() -> bool:
        stat = observer.client.exists(observer.layout.taskmanager("tm-1"))
        return stat is not None and stat.ephemeralOwner not in (0, old_session)

    wait_until(registered_by_new_session, 20, message="registered again on the new session")
    wait_until(lambda: not manager.fenced, 20, message="fencing lifted on the new session")
    leader.command(start_command(rig.blobs, "job-m", leader.epoch, args=[gate]))
    leader.wait_phase("job-m", AttemptPhase.RUNNING)
