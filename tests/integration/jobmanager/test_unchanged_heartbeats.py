"""Unchanged heartbeats on a real leader (issue 22): an idle TaskManager's reports sent once.

A leader that took a heartbeat's reports and would change nothing taking them again keeps them
and names their digest in its reply (``taken``). A heartbeat that then says its reports are
unchanged renews its TaskManager's liveness without the job table's lock; a changed report is
sent in full and applied; a command queued meanwhile still reaches a held unchanged heartbeat
at once, and a start command its TaskManager never took is still expired. A leader that does
not hold the reports an unchanged heartbeat names (a new leader after a failover, or one that
forgot the TaskManager) takes nothing and asks for them in full (``resend``).

Idle holds: a reply that keeps the reports says ``idle_hold``, and an unchanged heartbeat is
held up to that long; a heartbeat whose reports are not kept, or one of a TaskManager with a
start command in flight, is held an interval at most.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from jobmanager_harness import (
    HEARTBEAT_INTERVAL,
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.jobmanager.leader.long_poll import HeldHeartbeat
from steward.jobmanager.manager import JobManager
from steward.wire.heartbeat import (
    AttemptReport,
    Heartbeat,
    HeartbeatReply,
    ReportedCheckpoint,
    StartAttempt,
    reports_digest,
)
from steward.wire.runner_protocol import CheckpointEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

RUNNING = AttemptPhase.RUNNING


def full(tm: PretendTaskManager, *reports: AttemptReport, wait: float = 0.0) -> Heartbeat:
    """The next heartbeat with ``reports`` and their digest, as a TaskManager sends them."""
    return tm.beat(*reports).model_copy(
        update={"digest": reports_digest(list(reports)), "wait": wait}
    )


def unchanged(tm: PretendTaskManager, *reports: AttemptReport, wait: float = 0.0) -> Heartbeat:
    """The next heartbeat saying its reports are ``reports``, unchanged, without them."""
    return full(tm, *reports, wait=wait).model_copy(update={"attempts": [], "unchanged": True})


def running_job(
    cluster: JobManagerCluster, leader: JobManager, *, lease: bool = False
) -> tuple[PretendTaskManager, StartAttempt]:
    job_id = "job-1"
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, job_id)
    start, _ = tm.wait_command(leader, StartAttempt, job_id)
    if lease:
        tm.lease(start)
    tm.heartbeat(leader, report(start, RUNNING))
    cluster.wait_state(leader, job_id, "RUNNING")
    return tm, start


@contextmanager
def held_takes(leader: JobManager) -> Iterator[list[HeldHeartbeat]]:
    """The heartbeats the leader holds (long poll), as each is taken."""
    dispatcher = dispatcher_of(leader)
    original = dispatcher.take_heartbeat
    held: list[HeldHeartbeat] = []

    def recorded(beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        taken = original(beat, block=block)
        if isinstance(taken, HeldHeartbeat):
            held.append(taken)
        return taken

    dispatcher.take_heartbeat = recorded  # type: ignore[method-assign]
    try:
        yield held
    finally:
        dispatcher.take_heartbeat = original  # type: ignore[method-assign]


def kept(
    cluster: JobManagerCluster, leader: JobManager, *, lease: bool = False
) -> tuple[PretendTaskManager, AttemptReport]:
    """A TaskManager running ``job-1`` whose report (returned) the leader took and keeps."""
    tm, start = running_job(cluster, leader, lease=lease)
    running = report(start, RUNNING)
    assert tm.heartbeat(leader, beat=full(tm, running)).taken == reports_digest([running])
    return tm, running


def heartbeat_age(cluster: JobManagerCluster, leader: JobManager) -> float:
    (view,) = cluster.get(leader, "/v1/cluster").json()["taskmanagers"]
    age: float = view["heartbeat_age"]
    return age


def test_reports_that_change_nothing_are_kept_and_named_in_the_reply(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm, start = running_job(cluster, leader)
    running = report(start, RUNNING)

    reply = tm.heartbeat(leader, beat=full(tm, running))

    assert reply.taken == reports_digest([running])
    assert not reply.resend
    assert [(a.job_id, a.attempt) for a in reply.acks] == [("job-1", 1)]


def test_an_unchanged_heartbeat_renews_liveness_without_the_table_lock(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm, running = kept(cluster, leader)
    wait_until(lambda: heartbeat_age(cluster, leader) >= 1.0, 10.0, "the last heartbeat ages")

    replies: list[HeartbeatReply] = []
    lock = dispatcher_of(leader).table.lock
    lock.acquire()  # as a thread waiting on ZooKeeper under it would hold it
    try:
        sender = threading.Thread(
            target=lambda: replies.append(tm.heartbeat(leader, beat=unchanged(tm, running)))
        )
        sender.start()
        wait_until(lambda: replies, 5.0, "an unchanged heartbeat answered with the lock held")
    finally:
        lock.release()
    sender.join(10.0)

    (reply,) = replies
    assert (reply.taken, reply.resend, reply.commands) == (reports_digest([running]), False, [])
    assert heartbeat_age(cluster, leader) < 1.0
    assert cluster.job(leader, "job-1")["state"] == "RUNNING"


def test_a_changed_report_is_applied_and_the_old_digest_is_no_longer_matched(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm, running = kept(cluster, leader)
    checkpoint = ReportedCheckpoint(seq=1, event=CheckpointEvent(metadata={"offset": 7}))
    with_checkpoint = running.model_copy(update={"checkpoints": [checkpoint]})

    reply = tm.heartbeat(leader, beat=full(tm, with_checkpoint))

    assert [(a.job_id, a.checkpoint_seq) for a in reply.acks] == [("job-1", 1)]
    assert [c["metadata"] for c in cluster.job(leader, "job-1")["checkpoints"]] == [{"offset": 7}]
    assert reply.taken is None  # a fresh checkpoint: sent until acknowledged, never unchanged
    progressed = running.model_copy(update={"progress": {"rows": 42}})
    reply = tm.heartbeat(leader, beat=full(tm, progressed))
    assert reply.taken == reports_digest([progressed]) != reports_digest([running])
    assert cluster.job(leader, "job-1")["progress"] == {"rows": 42}
    stale = tm.heartbeat(leader, beat=unchanged(tm, running))
    assert (stale.resend, stale.taken, stale.acks) == (True, None, [])


def test_a_new_leader_asks_for_the_reports_in_full(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm, running = kept(cluster, leader, lease=True)

    leader.stop()
    cluster.wait_leading(standby)
    new_epoch = dispatcher_of(standby).epoch
    cluster.wait_state(standby, "job-1", "RUNNING")

    asked = tm.heartbeat(standby, beat=unchanged(tm, running))
    assert (asked.epoch, asked.resend, asked.taken) == (new_epoch, True, None)
    assert (asked.acks, asked.commands) == ([], [])
    reply = tm.heartbeat(standby, beat=full(tm, running))
    assert reply.taken == reports_digest([running])
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-1", 1, False)]
    assert reply.commands == []  # adopted: kept running


def test_a_leader_that_forgot_the_taskmanager_asks_for_the_reports_in_full(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm, running = kept(cluster, leader)
    rm = dispatcher_of(leader).table.rm
    known = rm.get("tm-1")

    tm.unregister()  # its session's end, as the leader sees it: its state goes
    wait_until(lambda: rm.get("tm-1") is not known, 10.0, "the leader forgets tm-1")

    asked = tm.heartbeat(leader, beat=unchanged(tm, running))
    assert (asked.resend, asked.taken, asked.acks) == (True, None, [])


def test_a_command_reaches_a_held_unchanged_heartbeat_at_once(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    tm, running = kept(cluster, leader)
    replies: list[HeartbeatReply] = []
    poll = unchanged(tm, running, wait=20.0)
    with held_takes(leader) as held:
        sender = threading.Thread(target=lambda: replies.append(tm.heartbeat(leader, beat=poll)))
        sender.start()
        wait_until(lambda: held, 10.0, "the unchanged heartbeat held")
        assert held[0].timeout == 10.0  # the default heartbeat.idle-hold, not the interval
        queued = time.monotonic()
        cluster.submitted(leader, "job-2")
        sender.join(15.0)

    (reply,) = replies
    assert [(c.command, c.job_id) for c in reply.commands] == [("start", "job-2")]
    assert time.monotonic() - queued < 10.0


def test_a_start_never_taken_is_expired_while_heartbeats_are_unchanged(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm, running = kept(cluster, leader)
    cluster.submitted(leader, "job-lost-reply", restart_strategy={"kind": "none"})

    def collected() -> StartAttempt | None:
        reply = tm.heartbeat(leader, beat=unchanged(tm, running))
        starts = [c for c in reply.commands if isinstance(c, StartAttempt)]
        return starts[0] if starts else None

    first = wait_until(collected, 10.0, "the start collected by an unchanged heartbeat")
    taken_at = time.monotonic()
    # That reply was lost: the TaskManager's reports stay unchanged and never list the attempt.
    again = wait_until(collected, 20.0, "the start sent again", interval=HEARTBEAT_INTERVAL / 2)
    assert first is not None and again is not None
    assert time.monotonic() - taken_at >= 2 * HEARTBEAT_INTERVAL + 5.0 - 0.1
    assert again.attempt == first.attempt == 1
    assert cluster.job(leader, "job-lost-reply")["failures"] == 0


# ---------------------------------------------------------------- idle holds

IDLE_HOLD = 3.0
"""The tests' ``heartbeat.idle-hold``: well above the interval, so a cut hold shows."""


def timed(
    tm: PretendTaskManager, leader: JobManager, beat: Heartbeat
) -> tuple[HeartbeatReply, float]:
    """``beat``'s reply and how long the leader held it."""
    started = time.monotonic()
    reply = tm.heartbeat(leader, beat=beat)
    return reply, time.monotonic() - started


def test_a_kept_taskmanager_is_told_the_idle_hold_and_held_that_long(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"heartbeat.idle-hold": f"{IDLE_HOLD:g}s"})
    tm, start = running_job(cluster, leader)
    running = report(start, RUNNING)
    assert tm.heartbeat(leader, beat=full(tm, running)).idle_hold == IDLE_HOLD

    reply, held = timed(tm, leader, unchanged(tm, running, wait=IDLE_HOLD + 5.0))

    assert (reply.taken, reply.idle_hold, reply.commands) == (
        reports_digest([running]),
        IDLE_HOLD,
        [],
    )
    assert IDLE_HOLD - 0.2 <= held < IDLE_HOLD + 2.0  # its hold, not the wait it asked


def test_a_heartbeat_whose_reports_are_not_kept_is_held_an_interval_at_most(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"heartbeat.idle-hold": f"{IDLE_HOLD:g}s"})
    tm, start = running_job(cluster, leader)
    # An older TaskManager's heartbeat (no digest: nothing kept) asking a long wait.
    older = tm.beat(report(start, RUNNING)).model_copy(update={"wait": IDLE_HOLD})

    reply, held = timed(tm, leader, older)

    assert (reply.taken, reply.idle_hold) == (None, None)
    assert held < IDLE_HOLD / 2


def test_an_idle_heartbeat_is_held_an_interval_at_most_while_a_start_is_in_flight(
    cluster: JobManagerCluster,
) -> None:
    # A start collected but not reported yet is expired as never taken on a heartbeat after
    # 2 x interval + 5 s: a longer hold would push that expiry back by the hold.
    leader = cluster.start_leader("jm-1", **{"heartbeat.idle-hold": f"{IDLE_HOLD:g}s"})
    tm, running = kept(cluster, leader)
    cluster.submitted(leader, "job-2")
    tm.wait_command(leader, StartAttempt, "job-2", running)
    assert tm.heartbeat(leader, beat=full(tm, running)).taken == reports_digest([running])

    reply, held = timed(tm, leader, unchanged(tm, running, wait=IDLE_HOLD))

    assert reply.taken == reports_digest([running])
    assert held < IDLE_HOLD / 2


# ---------------------------------------------------------------- busy heartbeats

# A busy TaskManager's poll carries new progress once per heartbeat.progress-interval and asks
# the idle hold (taskmanager/progress_pacer.py): the leader shows the progress at once, keeps
# the reports and holds the poll like an unchanged one; a change of state is never held.


def test_a_heartbeat_with_only_new_progress_is_shown_at_once_and_held_the_idle_hold(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"heartbeat.idle-hold": f"{IDLE_HOLD:g}s"})
    tm, running = kept(cluster, leader)
    progressed = running.model_copy(update={"progress": {"rows": 42}})
    answers: list[tuple[HeartbeatReply, float]] = []
    poll = threading.Thread(
        target=lambda: answers.append(timed(tm, leader, full(tm, progressed, wait=IDLE_HOLD)))
    )
    poll.start()

    wait_until(
        lambda: cluster.job(leader, "job-1")["progress"] == {"rows": 42}, 2.0, "progress shown"
    )
    assert not answers  # shown while its poll is still held
    poll.join(IDLE_HOLD + 10.0)
    ((reply, held),) = answers
    assert (reply.taken, reply.idle_hold) == (reports_digest([progressed]), IDLE_HOLD)
    assert IDLE_HOLD - 0.2 <= held < IDLE_HOLD + 2.0


def test_a_heartbeat_with_a_new_checkpoint_is_answered_at_once_whatever_it_asks(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"heartbeat.idle-hold": f"{IDLE_HOLD:g}s"})
    tm, running = kept(cluster, leader)
    checkpoint = ReportedCheckpoint(seq=1, event=CheckpointEvent(metadata={"offset": 7}))
    with_checkpoint = running.model_copy(
        update={"checkpoints": [checkpoint], "progress": {"rows": 43}}
    )

    reply, held = timed(tm, leader, full(tm, with_checkpoint, wait=IDLE_HOLD))

    assert [(a.job_id, a.checkpoint_seq) for a in reply.acks] == [("job-1", 1)]
    assert reply.taken is None
    assert held < IDLE_HOLD / 2
