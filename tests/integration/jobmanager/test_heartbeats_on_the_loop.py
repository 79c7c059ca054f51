"""Heartbeats taken on the REST server's event loop (issue 22), on a real leader.

A heartbeat whose reports change nothing stored is taken, and its long poll finished, on the
server's loop thread with no worker thread (a hop there and back cost the leader more CPU than
the heartbeat itself); one that needs a write goes to a heartbeat thread; and while another
thread holds the job table's lock (as a thread waiting on ZooKeeper under it does), heartbeats
wait on heartbeat threads and the loop goes on answering.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from jobmanager_harness import (
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.jobmanager.leader.long_poll import HeldHeartbeat
from steward.jobmanager.manager import JobManager
from steward.wire.heartbeat import (
    Command,
    Heartbeat,
    HeartbeatReply,
    ReportedCheckpoint,
    StartAttempt,
)
from steward.wire.runner_protocol import CheckpointEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper


@contextmanager
def commands_taken_on(leader: JobManager, tm_id: str) -> Iterator[list[str]]:
    """The names of the threads that take ``tm_id``'s commands: every heartbeat does, once as
    it is taken and once more as its long poll ends."""
    rm = dispatcher_of(leader).table.rm
    original: Callable[[str], list[Command]] = rm.take_commands
    threads: list[str] = []

    def recorded(taken_for: str) -> list[Command]:
        if taken_for == tm_id:
            threads.append(threading.current_thread().name)
        return original(taken_for)

    rm.take_commands = recorded  # type: ignore[method-assign]
    try:
        yield threads
    finally:
        rm.take_commands = original  # type: ignore[method-assign]


def running_job(cluster: JobManagerCluster) -> tuple[JobManager, PretendTaskManager, StartAttempt]:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-1")
    start, _ = tm.wait_command(leader, StartAttempt, "job-1")
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    cluster.wait_state(leader, "job-1", "RUNNING")
    return leader, tm, start


def test_a_heartbeat_that_changes_nothing_is_taken_on_the_event_loop(
    cluster: JobManagerCluster,
) -> None:
    leader, tm, start = running_job(cluster)
    loop_thread = f"{leader.id}-rest"
    with commands_taken_on(leader, "tm-1") as threads:
        beat = tm.beat(report(start, AttemptPhase.RUNNING)).model_copy(update={"wait": 0.3})
        reply = tm.heartbeat(leader, beat=beat)
    assert [(a.job_id, a.attempt) for a in reply.acks] == [("job-1", 1)]
    # Taken, held for its long poll, and finished: all on the loop, no worker thread.
    assert threads == [loop_thread, loop_thread]


def test_a_heartbeat_that_needs_a_write_is_taken_on_a_heartbeat_thread(
    cluster: JobManagerCluster,
) -> None:
    leader, tm, start = running_job(cluster)
    checkpoint = ReportedCheckpoint(seq=1, event=CheckpointEvent(metadata={"offset": 7}))
    with_checkpoint = report(start, AttemptPhase.RUNNING).model_copy(
        update={"checkpoints": [checkpoint]}
    )
    with commands_taken_on(leader, "tm-1") as threads:
        reply = tm.heartbeat(leader, with_checkpoint)
    assert [(a.job_id, a.checkpoint_seq) for a in reply.acks] == [("job-1", 1)]
    assert [c["metadata"] for c in cluster.job(leader, "job-1")["checkpoints"]] == [{"offset": 7}]
    assert len(threads) == 1  # acks of a checkpoint are not held
    assert threads[0] != f"{leader.id}-rest"


def test_heartbeats_wait_off_the_loop_while_the_table_lock_is_held(
    cluster: JobManagerCluster,
) -> None:
    leader, tm, start = running_job(cluster)
    checkpoint = ReportedCheckpoint(seq=1, event=CheckpointEvent(metadata={"offset": 7}))
    beats = [
        tm.beat(report(start, AttemptPhase.RUNNING)),  # quiet: would be taken on the loop
        tm.beat(
            report(start, AttemptPhase.RUNNING).model_copy(update={"checkpoints": [checkpoint]})
        ),
    ]
    replies: list[HeartbeatReply] = []
    lock = dispatcher_of(leader).table.lock
    with commands_taken_on(leader, "tm-1") as threads, blocking_takes(leader) as blocking:
        lock.acquire()  # as a thread waiting on ZooKeeper under it would hold it
        try:
            senders = [
                threading.Thread(target=lambda b=b: replies.append(tm.heartbeat(leader, beat=b)))
                for b in beats
            ]
            for sender in senders:
                sender.start()
            wait_until(lambda: len(blocking) == 2, 10.0, "both wait for the lock on threads")
            # The lock is released only once the probe has its answer: had a heartbeat waited
            # for it on the event loop, the probe could not be answered and would time out.
            with httpx.Client(timeout=10.0) as probe:
                health = probe.get(cluster.url(leader, "/healthz"))
            assert replies == []
        finally:
            lock.release()
        for sender in senders:
            sender.join(10.0)
    assert health.status_code == 200
    assert [[(a.job_id, a.attempt) for a in r.acks] for r in replies] == [[("job-1", 1)]] * 2
    assert [c["metadata"] for c in cluster.job(leader, "job-1")["checkpoints"]] == [{"offset": 7}]
    assert f"{leader.id}-rest" not in threads + blocking


@contextmanager
def blocking_takes(leader: JobManager) -> Iterator[list[str]]:
    """The threads of the heartbeats taken with ``block`` (off the loop), as each begins."""
    dispatcher = dispatcher_of(leader)
    original = dispatcher.take_heartbeat
    threads: list[str] = []

    def recorded(beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        if block:
            threads.append(threading.current_thread().name)
        return original(beat, block=block)

    dispatcher.take_heartbeat = recorded  # type: ignore[method-assign]
    try:
        yield threads
    finally:
        dispatcher.take_heartbeat = original  # type: ignore[method-assign]
