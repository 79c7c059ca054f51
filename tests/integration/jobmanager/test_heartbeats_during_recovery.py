"""A heartbeat that comes while a new leader recovers is held untaken until the term is ready.

Before "ready" no report is taken; taking the rest of a heartbeat (the TaskManager's state,
under the job table's lock) against a table still filling cost the takeover time and earned
the TaskManager a reply with nothing in it, after a whole interval's hold (issue 22). Now the
heartbeat waits, untaken, and is taken as soon as the term is ready: its reports acknowledged
in the one reply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from adoption_harness import leased_jobs, running_report
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of

from steward.jobmanager.leader import long_poll
from steward.jobmanager.leader.recovery import Recovery
from steward.jobmanager.manager import JobManager
from steward.wire.heartbeat import HeartbeatReply
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOB = "job-0"
SUCCESSOR = "jm-2"
INTERVAL = "20s"
"""The successor's heartbeat interval: the longest it holds a reply it does not keep."""
SLOW_HEARTBEATS = ("heartbeat.interval", "heartbeat.idle-hold", "heartbeat.progress-interval")
"""Each at least the one before (the configuration's rule): all set to :data:`INTERVAL`."""
SOON = 10.0


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """(entered, release): the successor's recovery stops after its listing until released."""
    entered, release = threading.Event(), threading.Event()
    real: Callable[..., Any] = Recovery._recover_all

    def gated(self: Recovery, *args: Any) -> Any:
        if self._term.jobmanager_id == SUCCESSOR:
            entered.set()
            release.wait(60)
        return real(self, *args)

    monkeypatch.setattr(Recovery, "_recover_all", gated)
    yield entered, release
    release.set()


@pytest.fixture
def holds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when a heartbeat's reply starts being held (whatever it waits on)."""
    held = threading.Event()
    real = long_poll.Wake.listen

    def listened(wake: long_poll.Wake, listener: Callable[[], None]) -> None:
        held.set()
        real(wake, listener)

    monkeypatch.setattr(long_poll.Wake, "listen", listened)
    return held


def recovering(
    cluster: JobManagerCluster, gate: tuple[threading.Event, threading.Event]
) -> tuple[PretendTaskManager, JobManager]:
    """A leased job, its leader gone, and jm-2's recovery held at the gate."""
    entered, _release = gate
    tm = leased_jobs(cluster, [JOB])
    successor = cluster.start(SUCCESSOR, **dict.fromkeys(SLOW_HEARTBEATS, INTERVAL))
    wait_until(entered.is_set, SOON, message="jm-2 recovers")
    return tm, successor


def test_a_heartbeat_during_recovery_is_taken_once_the_term_is_ready(
    cluster: JobManagerCluster,
    gate: tuple[threading.Event, threading.Event],
    holds: threading.Event,
) -> None:
    release = gate[1]
    tm, successor = recovering(cluster, gate)
    beat = tm.beat(running_report(JOB)).model_copy(update={"wait": 30.0})

    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(tm.heartbeat, successor, beat=beat)
        wait_until(holds.is_set, SOON, message="the heartbeat is held")
        state = dispatcher_of(successor).table.rm.get(tm.id)
        assert state is not None and state.last_heartbeat is None  # held untaken
        release.set()
        reply: HeartbeatReply = answer.result(timeout=SOON)  # not after the 20 s hold

    assert reply.epoch == 2
    assert [(ack.job_id, ack.attempt) for ack in reply.acks] == [(JOB, 1)]
    assert cluster.job(successor, JOB)["attempts"][-1]["adopted_by"] == [2]


def test_a_heartbeat_whose_hold_ends_during_recovery_is_answered_with_nothing_taken(
    cluster: JobManagerCluster, gate: tuple[threading.Event, threading.Event]
) -> None:
    release = gate[1]
    tm, successor = recovering(cluster, gate)
    beat = tm.beat(running_report(JOB)).model_copy(update={"wait": 0.2})

    reply = tm.heartbeat(successor, beat=beat)  # its hold ends while the recovery waits

    assert not release.is_set()
    assert (reply.epoch, reply.acks, reply.commands, reply.taken) == (2, [], [], None)
    state = dispatcher_of(successor).table.rm.get(tm.id)
    assert state is not None and state.last_heartbeat is None  # nor its TaskManager's state
