"""The JobMaster's rule for outcomes that arrive after their attempt was counted LOST.

A FINISHED outcome wins over the LOST verdict while the job is live: at once with no attempt
in flight, once the replacement is gone otherwise (whatever its own end). A FAILED one only
corrects the attempt's cause. Driven by hand, no I/O.
"""

from __future__ import annotations

import pytest
from jobmasters import EPOCH, NOW, make_master

from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.jobmaster_values import Late, Terminal
from steward.wire.heartbeat import Rejection
from steward.wire.jobs import FixedDelayRestart
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import (
    AttemptCancelled,
    FailedEvent,
    FinishedEvent,
    error_type_name,
)
from steward.wire.states import AttemptState, JobState, TerminalState

GRACE = 2.0
LOST = ErrorInfo(type="steward.TaskManagerLost", message="tm-1 lost its session")
DONE = FinishedEvent(value={"rows": 42}, at=700.0)


def lost_once() -> JobMaster:
    """Attempt 1 ran on tm-1 and was counted LOST; the job is RESTARTING."""
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0))
    master.initializing()
    master.initialized(FinishedEvent())
    master.deploy("tm-1", EPOCH)
    master.running(1, started_at=500.0)
    assert master.lost(1, LOST, now=NOW, grace=GRACE) is None
    assert master.state is JobState.RESTARTING
    return master


def replaced() -> JobMaster:
    """As :func:`lost_once`, with attempt 2 running on tm-2."""
    master = lost_once()
    master.deploy("tm-2", EPOCH)
    master.running(2, started_at=800.0)
    return master


def states(master: JobMaster) -> dict[int, AttemptState]:
    return {a.number: a.state for a in master.attempts}


def test_a_late_finish_with_nothing_in_flight_finishes_the_job_at_once() -> None:
    master = lost_once()

    verdict, terminal = master.late_outcome(1, DONE)

    assert verdict is Late.FINISHED
    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})
    assert master.state is JobState.FINISHED and master.current is None
    record = master.attempt(1)
    assert record is not None
    assert (record.state, record.ended_at, record.cause) == (AttemptState.FINISHED, 700.0, None)


def test_a_late_finish_asks_to_cancel_the_replacement_and_waits_for_it() -> None:
    master = replaced()

    verdict, terminal = master.late_outcome(1, DONE)

    assert (verdict, terminal) == (Late.CANCEL_REPLACEMENT, None)
    assert master.current is not None and master.current.number == 2
    assert not master.state.is_terminal
    assert master.reason is not None and "cancelling attempt 2" in master.reason
    assert master.late_outcome(1, DONE) == (Late.PENDING, None)


def test_the_replacement_cancelled_for_a_late_finish_ends_the_job_with_the_late_value() -> None:
    master = replaced()
    master.late_outcome(1, DONE)
    cancelled = ErrorInfo(type=error_type_name(AttemptCancelled), message="cancelled")

    terminal = master.ended(2, FailedEvent(error=cancelled, at=900.0), now=NOW)

    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})
    assert master.state is JobState.FINISHED
    assert states(master) == {1: AttemptState.FINISHED, 2: AttemptState.CANCELED}
    assert master.failures == 1, "the replacement's end spends nothing more"


def test_a_replacement_that_finished_first_still_yields_the_earlier_value() -> None:
    master = replaced()
    master.late_outcome(1, DONE)

    terminal = master.ended(2, FinishedEvent(value="second", at=900.0), now=NOW)

    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})
    assert states(master) == {1: AttemptState.FINISHED, 2: AttemptState.FINISHED}


def test_a_replacement_lost_or_refused_after_a_late_finish_ends_the_job_finished() -> None:
    lost = replaced()
    lost.late_outcome(1, DONE)
    assert lost.lost(2, LOST, now=NOW, grace=GRACE) == Terminal(
        TerminalState.FINISHED, value={"rows": 42}
    )
    assert states(lost) == {1: AttemptState.FINISHED, 2: AttemptState.LOST}

    refused = lost_once()
    refused.deploy("tm-2", EPOCH)
    refused.late_outcome(1, DONE)
    terminal = refused.rejected(2, Rejection.LEASE_HELD, "held", now=NOW)
    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})
    assert states(refused) == {1: AttemptState.FINISHED}


def test_a_cancel_while_waiting_for_the_replacement_still_finishes() -> None:
    master = replaced()
    master.late_outcome(1, DONE)
    assert master.cancel() is None

    cancelled = ErrorInfo(type=error_type_name(AttemptCancelled), message="cancelled")
    terminal = master.ended(2, FailedEvent(error=cancelled), now=NOW)

    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})


def test_a_late_failure_only_corrects_the_attempts_cause() -> None:
    master = replaced()
    boom = FailedEvent(error=ErrorInfo(type="ValueError", message="bad row"))

    assert master.late_outcome(1, boom) == (Late.CAUSE, None)

    record = master.attempt(1)
    assert record is not None and record.state is AttemptState.LOST
    assert record.cause is not None and record.cause.type == "ValueError"
    assert master.state is JobState.RUNNING and master.failures == 1
    assert master.current is not None and master.current.number == 2


@pytest.mark.parametrize("number", [2, 7])
def test_an_attempt_not_counted_lost_is_ignored(number: int) -> None:
    master = replaced()  # attempt 2 is the one in flight; 7 never existed

    assert master.late_outcome(number, DONE) == (Late.IGNORED, None)
    assert master.late is None and master.state is JobState.RUNNING


def test_an_attempt_that_failed_is_not_reopened() -> None:
    master = replaced()
    master.ended(2, FailedEvent(error=LOST), now=NOW)  # attempt 2 FAILED, restarting

    assert master.late_outcome(2, DONE) == (Late.IGNORED, None)


def test_too_late_once_the_job_is_terminal() -> None:
    master = replaced()
    master.ended(2, FinishedEvent(value="second"), now=NOW)

    assert master.late_outcome(1, DONE) == (Late.IGNORED, None)
    assert master.state is JobState.FINISHED
