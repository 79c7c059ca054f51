"""The wait a TaskManager's heartbeat asks (idle holds, issue 22): the idle hold only for the
poller's heartbeats to a leader that keeps its reports and said one (unchanged, or with new
progress: the leader holds those only if it keeps them again), and replies applied in the order
their heartbeats were built.

Only the sender's bookkeeping is tested here (no request is sent): the session and the leases
are stand-ins for the two values a heartbeat reads of them. The exchanges themselves are tested
against a real election and HTTP in tests/integration/taskmanager/test_idle_holds.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from steward.taskmanager.heartbeat_sender import HeartbeatSender
from steward.taskmanager.reporting import Attempts
from steward.testing.attempts import start_attempt
from steward.wire.heartbeat import HeartbeatReply, reports_digest

EPOCH = 3
IDLE = reports_digest([])
"""The digest of a TaskManager that runs nothing."""


def sender(idle_hold: float | None = 10.0) -> HeartbeatSender:
    stand_in: Any = SimpleNamespace(session_id=7, newest_epoch=EPOCH)
    return HeartbeatSender(
        tm_id="tm-1",
        address="http://tm-1.invalid:1",
        slots=2,
        interval=1.0,
        idle_hold=idle_hold,
        attempts=Attempts(2),
        session=stand_in,
        leases=stand_in,
        on_reply=lambda _reply: None,
    )


def kept(idle_hold: float | None) -> HeartbeatReply:
    return HeartbeatReply(epoch=EPOCH, leader="jm-1", taken=IDLE, idle_hold=idle_hold)


def test_the_poll_asks_the_shorter_idle_hold_once_the_leader_keeps_the_reports() -> None:
    tm = sender(idle_hold=10.0)
    assert tm.heartbeat(1.0, EPOCH, poll=True).wait == 1.0  # nothing kept yet

    tm._note_taken(kept(4.0), seq=1)

    poll = tm.heartbeat(1.0, EPOCH, poll=True)
    assert (poll.unchanged, poll.wait) == (True, 4.0)
    assert tm.heartbeat(0.0, EPOCH).wait == 0.0  # the notifier's never waits
    assert not tm.heartbeat(1.0, EPOCH + 1, poll=True).unchanged  # another leader: in full


def test_a_poll_with_new_reports_asks_the_hold_of_a_leader_that_kept_the_last_ones() -> None:
    # Busy: new progress makes every poll full; a leader that keeps them holds it as long.
    tm = sender(idle_hold=10.0)
    tm._note_taken(kept(4.0), seq=1)
    tm._attempts.admit(start_attempt("job-a", 1, epoch=EPOCH), None, "")

    poll = tm.heartbeat(1.0, EPOCH, poll=True)

    assert (poll.unchanged, poll.wait) == (False, 4.0)
    assert tm.heartbeat(0.0, EPOCH).wait == 0.0  # the notifier's never waits
    assert tm.heartbeat(1.0, EPOCH + 1, poll=True).wait == 1.0  # another leader: the interval


def test_a_leader_that_says_no_idle_hold_gets_the_interval() -> None:
    tm = sender(idle_hold=10.0)

    tm._note_taken(kept(None), seq=1)

    poll = tm.heartbeat(1.0, EPOCH, poll=True)
    assert (poll.unchanged, poll.wait) == (True, 1.0)


def test_a_taskmanager_without_an_idle_hold_asks_the_interval() -> None:
    tm = sender(idle_hold=None)

    tm._note_taken(kept(10.0), seq=1)

    assert tm.heartbeat(1.0, EPOCH, poll=True).wait == 1.0


def test_a_reply_to_an_older_heartbeat_does_not_undo_a_newer_ones() -> None:
    # A long poll answered after the pacer's heartbeat was: its reply is older news.
    tm = sender()
    tm._note_taken(kept(4.0), seq=5)

    tm._note_taken(HeartbeatReply(epoch=EPOCH, leader="jm-1"), seq=3)

    assert tm.heartbeat(1.0, EPOCH, poll=True).unchanged
    tm._note_taken(HeartbeatReply(epoch=EPOCH, leader="jm-1"), seq=6)
    assert not tm.heartbeat(1.0, EPOCH, poll=True).unchanged
