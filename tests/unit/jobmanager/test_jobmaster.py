"""The JobMaster: one job's state machine on the leader, driven by hand, no I/O.

Covers every transition the Dispatcher feeds it (initialize, deploy, running, ended, lost,
rejected, cancel, adopt, fail) and the status record it persists.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from jobmasters import EPOCH, NOW, POINTER, make_master

from steward.jobmanager.leader.jobmaster import REJECTION_BACKOFF, JobMaster
from steward.jobmanager.leader.jobmaster_values import Terminal
from steward.wire.heartbeat import Rejection
from steward.wire.jobs import (
    ExponentialDelayRestart,
    FixedDelayRestart,
    JobSpec,
    NoRestart,
    RestartStrategy,
)
from steward.wire.records import (
    MAX_ATTEMPTS_KEPT,
    MAX_CAUSE_TRACEBACK,
    AttemptRecord,
    ErrorInfo,
    JobStatusRecord,
)
from steward.wire.runner_protocol import (
    AttemptCancelled,
    FailedEvent,
    FinishedEvent,
    error_type_name,
)
from steward.wire.states import AttemptState, JobState, TerminalState

BOOM = ErrorInfo(type="ValueError", message="boom", traceback="Traceback ...")


def earlier_record(
    state: JobState, attempts: list[AttemptRecord], **fields: Any
) -> JobStatusRecord:
    """The status record an earlier leader wrote for ``job-1`` (submitted at 50, updated at 60)."""
    return JobStatusRecord(
        job_id="job-1",
        state=state,
        submitted_at=50.0,
        updated_at=60.0,
        attempts=attempts,
        **fields,
    )


def scheduled(strategy: RestartStrategy | None = None) -> JobMaster:
    """A master whose initialize hook passed: SCHEDULED, waiting for a slot."""
    master = make_master(strategy)
    master.initializing()
    assert master.initialized(FinishedEvent()) is None
    return master


def running(strategy: RestartStrategy | None = None, tm: str = "tm-1") -> JobMaster:
    """A master with attempt 1 deployed to ``tm`` and reported running."""
    master = scheduled(strategy)
    master.deploy(tm, EPOCH)
    assert master.running(1, started_at=500.0)
    return master


def failed(message: str = "boom") -> FailedEvent:
    return FailedEvent(error=ErrorInfo(type="ValueError", message=message), at=600.0)


# ---------------------------------------------------------------- initialize


def test_a_new_master_is_submitted_and_wants_no_slot() -> None:
    master = make_master()
    assert master.job_id == "job-1"
    assert master.state is JobState.SUBMITTED
    assert master.attempts == []
    assert master.attempt_count == 0
    assert not master.is_recovery
    assert not master.wants_slot(NOW)


def test_initialize_ok_schedules_the_job() -> None:
    master = make_master()
    master.initializing()
    assert master.state is JobState.INITIALIZING
    assert not master.wants_slot(NOW)
    assert master.initialized(FinishedEvent()) is None
    assert master.state is JobState.SCHEDULED
    assert master.reason
    assert master.wants_slot(NOW)


def test_initialize_failed_fails_the_job_with_the_hooks_error() -> None:
    master = make_master(FixedDelayRestart(attempts=5, delay=0))
    master.initializing()
    error = ErrorInfo(type="RuntimeError", message="output exists", traceback="tb")
    terminal = master.initialized(FailedEvent(error=error))
    assert terminal == Terminal(TerminalState.FAILED, error=error)
    assert master.state is JobState.FAILED
    assert master.reason is not None
    assert "output exists" in master.reason
    assert master.failures == 0  # the restart budget is for attempts, not the hook


def test_cancel_while_initializing_is_terminal_at_once() -> None:
    master = make_master()
    master.initializing()
    assert master.cancel() == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED


def test_initialize_finishing_after_a_cancel_request_cancels() -> None:
    master = make_master()
    master.initializing()
    master.cancel_requested = True  # e.g. set by a cancel that raced the hook's end
    assert master.initialized(FinishedEvent()) == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED


# ---------------------------------------------------------------- deploy, running, ended


def test_deploy_starts_attempt_one_and_takes_the_job_off_the_queue() -> None:
    master = scheduled()
    deployment = master.deploy("tm-1", EPOCH)
    assert (deployment.number, deployment.taskmanager, deployment.epoch) == (1, "tm-1", EPOCH)
    assert not deployment.reported
    assert master.current is deployment
    assert master.attempt_count == 1
    assert master.state is JobState.SCHEDULED
    assert master.reason is not None
    assert "tm-1" in master.reason
    assert [(a.number, a.taskmanager, a.epoch, a.state) for a in master.attempts] == [
        (1, "tm-1", EPOCH, AttemptState.DEPLOYING)
    ]
    assert not master.wants_slot(NOW + 1e6)


def test_running_is_news_once() -> None:
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    assert master.running(1, started_at=500.0)
    assert master.state is JobState.RUNNING
    assert master.reason is None
    assert master.current is not None
    assert master.current.reported
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.state is AttemptState.RUNNING
    assert attempt.started_at == 500.0
    assert not master.running(1, started_at=500.0)


def test_running_of_another_attempt_is_ignored() -> None:
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    assert not master.running(7, started_at=500.0)
    assert master.state is JobState.SCHEDULED
    assert master.current is not None
    assert not master.current.reported


def test_running_without_a_start_time_uses_now() -> None:
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    assert master.running(1, started_at=None)
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.started_at is not None


def test_ended_finished_is_terminal_finished_with_the_value() -> None:
    master = running()
    terminal = master.ended(1, FinishedEvent(value={"rows": 42}, at=700.0), now=NOW)
    assert terminal == Terminal(TerminalState.FINISHED, value={"rows": 42})
    assert master.state is JobState.FINISHED
    assert master.current is None
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.state is AttemptState.FINISHED
    assert attempt.ended_at == 700.0
    assert attempt.cause is None


def test_failed_attempt_with_no_restart_fails_the_job() -> None:
    master = running(NoRestart())
    terminal = master.ended(1, failed(), now=NOW)
    assert terminal is not None
    assert terminal.state is TerminalState.FAILED
    assert terminal.error is not None
    assert terminal.error.message == "boom"
    assert master.state is JobState.FAILED
    assert master.failures == 1
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.state is AttemptState.FAILED
    assert attempt.cause is not None
    assert attempt.cause.message == "boom"


def test_failed_attempt_restarts_after_the_fixed_delay_until_the_budget_is_spent() -> None:
    master = running(FixedDelayRestart(attempts=2, delay=5.0))
    assert master.ended(1, failed("first"), now=NOW) is None
    assert master.state is JobState.RESTARTING
    assert master.failures == 1
    assert master.reason is not None
    assert "restart 1 of 2" in master.reason
    assert "first" in master.reason
    assert master.current is None
    assert not master.wants_slot(NOW + 4.9)
    assert master.wants_slot(NOW + 5.0)

    deployment = master.deploy("tm-2", EPOCH)
    assert deployment.number == 2
    assert master.state is JobState.SCHEDULED
    master.running(2, started_at=None)
    assert master.ended(2, failed("second"), now=NOW + 10) is None
    assert master.state is JobState.RESTARTING
    assert master.failures == 2
    assert master.wants_slot(NOW + 15.0)

    master.deploy("tm-1", EPOCH)
    master.running(3, started_at=None)
    terminal = master.ended(3, failed("third"), now=NOW + 20)
    assert terminal is not None
    assert terminal.state is TerminalState.FAILED
    assert terminal.error is not None
    assert terminal.error.message == "third"
    assert master.state is JobState.FAILED
    assert master.failures == 3
    assert [a.number for a in master.attempts] == [1, 2, 3]
    assert all(a.state is AttemptState.FAILED for a in master.attempts)


def test_a_permanent_error_fails_the_job_at_once_with_restarts_left() -> None:
    master = running(FixedDelayRestart(attempts=10, delay=5.0))
    error = ErrorInfo(type="SyntaxError", message="invalid syntax", permanent=True)
    terminal = master.ended(1, FailedEvent(error=error), now=NOW)
    assert terminal is not None
    assert terminal.state is TerminalState.FAILED
    assert terminal.error == error
    assert master.state is JobState.FAILED
    assert master.reason is not None
    assert "no restart can fix" in master.reason
    assert not master.wants_slot(NOW + 3600)


def test_failed_attempt_restarts_with_the_exponential_delay() -> None:
    master = running(ExponentialDelayRestart(initial=2.0, max=5.0, multiplier=2.0, max_attempts=3))
    expected_delays = [2.0, 4.0, 5.0]
    for number, delay in enumerate(expected_delays, start=1):
        assert master.ended(number, failed(), now=NOW) is None
        assert master.state is JobState.RESTARTING
        assert master.not_before == pytest.approx(NOW + delay)
        assert not master.wants_slot(NOW + delay - 0.01)
        assert master.wants_slot(NOW + delay)
        master.deploy("tm-1", EPOCH)
        master.running(number + 1, started_at=None)
    terminal = master.ended(4, failed(), now=NOW)
    assert terminal is not None
    assert terminal.state is TerminalState.FAILED


def test_a_restart_counts_attempt_numbers_on() -> None:
    master = running(FixedDelayRestart(attempts=1, delay=0.0))
    master.ended(1, failed(), now=NOW)
    assert master.deploy("tm-1", EPOCH).number == 2
    assert master.attempt_count == 2


def test_the_cause_kept_in_an_attempt_has_its_traceback_cut() -> None:
    master = running(NoRestart())
    long = ErrorInfo(type="ValueError", message="m", traceback="x" * (MAX_CAUSE_TRACEBACK * 3))
    master.ended(1, FailedEvent(error=long), now=NOW)
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.cause is not None
    assert attempt.cause.traceback is not None
    assert len(attempt.cause.traceback) < MAX_CAUSE_TRACEBACK + 100


# ---------------------------------------------------------------- lost


def test_lost_attempt_spends_a_restart_and_respects_the_grace() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    cause = ErrorInfo(type="steward.TaskManagerLost", message="tm-1 is gone")
    assert master.lost(1, cause, now=NOW, grace=2.0) is None
    assert master.state is JobState.RESTARTING
    assert master.failures == 1
    assert master.current is None
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.state is AttemptState.LOST
    assert attempt.cause == cause
    assert not master.wants_slot(NOW + 1.99)
    assert master.wants_slot(NOW + 2.0)


def test_lost_attempt_waits_the_longer_of_grace_and_restart_delay() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=7.0))
    cause = ErrorInfo(type="steward.TaskManagerLost", message="gone")
    assert master.lost(1, cause, now=NOW, grace=2.0) is None
    assert master.not_before == pytest.approx(NOW + 7.0)


def test_lost_attempt_with_the_budget_spent_fails_the_job() -> None:
    master = running(NoRestart())
    cause = ErrorInfo(type="steward.TaskManagerLost", message="gone")
    terminal = master.lost(1, cause, now=NOW, grace=1.0)
    assert terminal == Terminal(TerminalState.FAILED, error=cause)
    assert master.state is JobState.FAILED


def test_lost_attempt_of_a_job_being_cancelled_cancels_it() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    assert master.cancel() is None
    cause = ErrorInfo(type="steward.TaskManagerLost", message="gone")
    assert master.lost(1, cause, now=NOW, grace=1.0) == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED
    assert master.failures == 0


# ---------------------------------------------------------------- rejected


@pytest.mark.parametrize("rejection", list(Rejection))
def test_rejected_attempt_spends_no_restart_shows_why_and_backs_off(rejection: Rejection) -> None:
    master = scheduled(NoRestart())
    master.deploy("tm-1", EPOCH)
    master.rejected(1, rejection, "the lease is still held by attempt 0", now=NOW)
    assert master.state is JobState.SCHEDULED
    assert master.failures == 0
    assert master.current is None
    assert master.attempts == []
    assert master.attempt_count == 0
    assert master.reason is not None
    assert rejection.value in master.reason
    assert "the lease is still held" in master.reason
    assert not master.wants_slot(NOW + REJECTION_BACKOFF - 0.01)
    assert master.wants_slot(NOW + REJECTION_BACKOFF)
    # The next attempt reuses the number: the rejected one never ran.
    assert master.deploy("tm-2", EPOCH).number == 1


def test_rejection_after_a_failure_keeps_the_earlier_attempts() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    master.ended(1, failed(), now=NOW)
    master.deploy("tm-1", EPOCH)
    master.rejected(2, Rejection.LEASE_HELD, "held", now=NOW)
    assert [a.number for a in master.attempts] == [1]
    assert master.attempt_count == 1
    assert master.failures == 1
    assert master.deploy("tm-1", EPOCH).number == 2


def test_rejection_of_another_attempt_is_ignored() -> None:
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    master.rejected(5, Rejection.NO_SLOT, "no slot", now=NOW)
    assert master.current is not None
    assert master.current.number == 1
    assert [a.number for a in master.attempts] == [1]


def test_rejected_attempt_of_a_job_being_cancelled_ends_it_canceled() -> None:
    """BUG: a job cancelled while its start command was in flight, whose TaskManager then
    refuses the attempt (lease held, stale epoch, ...), is left SCHEDULED with
    ``cancel_requested`` set: ``wants_slot`` is False forever and nothing ever terminates it.
    Nothing runs, so the cancel is complete: the job must end CANCELED."""
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    assert master.cancel() is None
    assert master.state is JobState.CANCELLING
    outcome = master.rejected(1, Rejection.LEASE_HELD, "held", now=NOW)  # type: ignore[func-returns-value]
    assert master.state is JobState.CANCELED, (
        f"a cancelled job whose attempt was refused is stuck in {master.state}"
        f" ({master.reason!r}), wants_slot={master.wants_slot(NOW + 60)}"
    )
    assert outcome == Terminal(TerminalState.CANCELED)


# ---------------------------------------------------------------- cancel


def test_cancel_without_an_attempt_is_terminal_at_once() -> None:
    master = scheduled()
    assert master.cancel() == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED
    assert master.cancel_requested


def test_cancel_while_restarting_is_terminal_at_once() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=30.0))
    master.ended(1, failed(), now=NOW)
    assert master.cancel() == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED


def test_cancel_with_an_attempt_in_flight_waits_for_its_end() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    assert master.cancel() is None
    assert master.state is JobState.CANCELLING
    assert not master.wants_slot(NOW + 1e6)
    # A late "running" report does not take the job out of CANCELLING.
    master.running(1, started_at=None)
    assert master.state is JobState.CANCELLING
    cancelled = FailedEvent(
        error=ErrorInfo(type=error_type_name(AttemptCancelled), message="SIGTERM"), at=650.0
    )
    assert master.ended(1, cancelled, now=NOW) == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED
    assert master.failures == 0
    attempt = master.attempt(1)
    assert attempt is not None
    assert attempt.state is AttemptState.CANCELED


def test_cancel_of_a_deploying_attempt_waits_too() -> None:
    master = scheduled()
    master.deploy("tm-1", EPOCH)
    assert master.cancel() is None
    assert master.state is JobState.CANCELLING


def test_a_failure_while_cancelling_cancels_and_spends_nothing() -> None:
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    master.cancel()
    assert master.ended(1, failed("crashed on SIGTERM"), now=NOW) == Terminal(
        TerminalState.CANCELED
    )
    assert master.state is JobState.CANCELED
    assert master.failures == 0


def test_cancel_racing_a_finished_attempt_is_finished() -> None:
    master = running()
    assert master.cancel() is None
    terminal = master.ended(1, FinishedEvent(value=[1, 2, 3]), now=NOW)
    assert terminal == Terminal(TerminalState.FINISHED, value=[1, 2, 3])
    assert master.state is JobState.FINISHED


def test_fail_makes_the_job_failed_with_the_error() -> None:
    master = scheduled()
    error = ErrorInfo(type="steward.RecoveryError", message="graph unreadable")
    assert master.fail(error) == Terminal(TerminalState.FAILED, error=error)
    assert master.state is JobState.FAILED
    assert master.reason == "graph unreadable"


# ---------------------------------------------------------------- recovery: record, adopt


def test_a_master_built_from_a_record_continues_numbers_and_budget() -> None:
    attempts = [
        AttemptRecord(number=1, taskmanager="tm-1", epoch=1, state=AttemptState.FAILED),
        AttemptRecord(number=2, taskmanager="tm-2", epoch=2, state=AttemptState.LOST),
    ]
    record = earlier_record(JobState.RESTARTING, attempts, attempt_count=2, failures=2, epoch=2)
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0), record=record)
    assert master.is_recovery
    assert master.submitted_at == 50.0
    assert master.failures == 2
    assert master.attempts == attempts
    assert master.deploy("tm-1", EPOCH).number == 3
    master.running(3, started_at=None)
    assert master.ended(3, failed(), now=NOW) is None  # the third and last restart
    master.deploy("tm-1", EPOCH)
    master.running(4, started_at=None)
    terminal = master.ended(4, failed(), now=NOW)
    assert terminal is not None
    assert terminal.state is TerminalState.FAILED


def test_attempt_count_from_a_record_is_at_least_its_attempts() -> None:
    attempts = [
        AttemptRecord(number=n, taskmanager="tm-1", epoch=1, state=AttemptState.FAILED)
        for n in (1, 2, 3)
    ]
    record = earlier_record(JobState.RESTARTING, attempts, attempt_count=0, epoch=1)
    assert make_master(record=record).attempt_count == 3


def test_adopt_keeps_the_attempt_number_and_records_the_adopting_epoch() -> None:
    attempts = [
        AttemptRecord(number=1, taskmanager="tm-1", epoch=1, state=AttemptState.FAILED),
        AttemptRecord(
            number=2, taskmanager="tm-2", epoch=2, state=AttemptState.RUNNING, started_at=77.0
        ),
    ]
    record = earlier_record(JobState.RUNNING, attempts, attempt_count=2, failures=1, epoch=2)
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0), record=record)
    deployment = master.adopt("tm-2", 2, lease_epoch=2, epoch=5)
    assert (deployment.number, deployment.taskmanager, deployment.epoch) == (2, "tm-2", 2)
    assert not deployment.reported
    assert master.current is deployment
    assert master.state is JobState.RUNNING
    assert master.attempt_count == 2
    assert master.failures == 1
    adopted = master.attempt(2)
    assert adopted is not None
    assert adopted.adopted_by == [5]
    assert adopted.started_at == 77.0
    assert adopted.epoch == 2
    assert [a.number for a in master.attempts] == [1, 2]
    # A second adoption (yet another leader) appends its epoch.
    master.adopt("tm-2", 2, lease_epoch=2, epoch=6)
    again = master.attempt(2)
    assert again is not None
    assert again.adopted_by == [5, 6]
    # The adopted attempt's report is not news about its start time, but it is now reported.
    assert not master.running(2, started_at=78.0)
    assert master.current is not None
    assert master.current.reported
    # The next attempt continues the numbering.
    master.ended(2, failed(), now=NOW)
    assert master.deploy("tm-1", EPOCH).number == 3


def test_adopt_an_attempt_the_record_does_not_know() -> None:
    master = make_master()
    master.adopt("tm-9", 4, lease_epoch=2, epoch=3)
    assert master.attempt_count == 4
    adopted = master.attempt(4)
    assert adopted is not None
    assert (adopted.taskmanager, adopted.epoch, adopted.state) == ("tm-9", 2, AttemptState.RUNNING)
    assert adopted.adopted_by == [3]
    assert master.running(4, started_at=90.0)  # first report with a start time is news


def test_await_report_then_running() -> None:
    master = make_master()
    master.await_report(2, "tm-1", 1, until=NOW + 5)
    assert master.state is JobState.RUNNING
    assert master.reason is not None
    assert "tm-1" in master.reason
    assert master.current is not None
    assert master.current.await_report_until == NOW + 5
    master.running(2, started_at=None)
    assert master.current.await_report_until is None
    assert master.current.reported


# ---------------------------------------------------------------- the status record


def test_record_round_trips_through_json() -> None:
    master = running(FixedDelayRestart(attempts=5, delay=0.0))
    master.ended(1, failed(), now=NOW)
    master.deploy("tm-2", EPOCH)
    master.running(2, started_at=800.0)
    master.adopt("tm-2", 2, lease_epoch=EPOCH, epoch=EPOCH + 1)
    record = master.record(EPOCH + 1)
    assert record.job_id == "job-1"
    assert record.name == "the job"
    assert record.state is JobState.RUNNING
    assert record.epoch == EPOCH + 1
    assert record.failures == 1
    assert record.attempt_count == 2
    assert record.submitted_at == 123.0
    decoded = JobStatusRecord.from_json(record.to_json())
    assert decoded == record
    assert decoded.attempts[0].cause is not None
    assert decoded.attempts[1].adopted_by == [EPOCH + 1]


def test_record_keeps_at_most_the_latest_attempts() -> None:
    total = MAX_ATTEMPTS_KEPT + 7
    master = running(FixedDelayRestart(attempts=total + 1, delay=0.0))
    for number in range(1, total + 1):
        assert master.ended(number, failed(f"failure {number}"), now=NOW) is None
        master.deploy("tm-1", EPOCH)
        master.running(number + 1, started_at=None)
    record = master.record(EPOCH)
    assert len(record.attempts) == MAX_ATTEMPTS_KEPT
    assert [a.number for a in record.attempts] == list(
        range(total + 2 - MAX_ATTEMPTS_KEPT, total + 2)
    )
    assert record.attempt_count == total + 1
    assert record.failures == total
    decoded = JobStatusRecord.from_json(record.to_json())
    assert decoded == record
    # A new leader continues from the trimmed record with the right numbers.
    recovered = make_master(FixedDelayRestart(attempts=total + 5, delay=0.0), record=decoded)
    assert recovered.attempt_count == total + 1
    assert recovered.failures == total


def cancelling_record() -> JobStatusRecord:
    """What the leader persisted after a cancel request for a running attempt 1 on tm-1."""
    master = running(FixedDelayRestart(attempts=3, delay=0.0))
    assert master.cancel() is None
    record = master.record(EPOCH)
    assert record.state is JobState.CANCELLING
    return record


def test_a_cancel_request_survives_recovery_when_the_attempt_is_adopted() -> None:
    """BUG: JobMaster(record=...) drops the persisted CANCELLING state; a new leader that
    adopts the attempt shows it RUNNING and never cancels it, although the user was told 202."""
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0), record=cancelling_record())
    master.adopt("tm-1", 1, lease_epoch=EPOCH, epoch=EPOCH + 1)
    assert master.cancel_requested
    assert master.state is JobState.CANCELLING


def test_a_cancel_request_survives_recovery_when_the_attempt_is_gone() -> None:
    """BUG: same cause; the attempt died with the old leader's term, so the new leader calls
    lost(): the job is RESTARTING (and will run again) instead of CANCELED."""
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0), record=cancelling_record())
    cause = ErrorInfo(type="steward.TaskManagerLost", message="gone")
    assert master.lost(1, cause, now=NOW, grace=1.0) == Terminal(TerminalState.CANCELED)
    assert master.state is JobState.CANCELED


# ---------------------------------------------------------------- restart delay across leaders


def restarting_record(restart_at: float | None, failures: int = 1) -> JobStatusRecord:
    failed = AttemptRecord(number=1, taskmanager="tm-1", epoch=1, state=AttemptState.FAILED)
    return earlier_record(
        JobState.RESTARTING,
        [failed],
        attempt_count=1,
        failures=failures,
        restart_at=restart_at,
        epoch=1,
    )


def recovered(record: JobStatusRecord, delay: float) -> JobMaster:
    """A new leader's master of ``record``, its initialize hook passed."""
    master = make_master(FixedDelayRestart(attempts=3, delay=delay), record=record)
    master.initializing()
    assert master.initialized(FinishedEvent()) is None
    return master


def test_the_record_of_a_restarting_job_carries_when_the_restart_is_due() -> None:
    master = running(FixedDelayRestart(attempts=2, delay=30.0))
    before = time.time()
    assert master.ended(1, failed(), now=NOW) is None
    due = master.record(EPOCH).restart_at
    assert due is not None
    assert before + 30.0 <= due <= time.time() + 30.0
    master.deploy("tm-1", EPOCH)
    assert master.record(EPOCH).restart_at is None  # no longer restarting


def test_a_new_leader_keeps_what_is_left_of_the_restart_delay() -> None:
    master = recovered(restarting_record(time.time() + 20.0), delay=30.0)
    assert master.state is JobState.RESTARTING
    assert master.reason is not None
    assert "restart delay" in master.reason
    now = time.monotonic()
    assert not master.wants_slot(now)
    assert not master.wants_slot(now + 19.0)
    assert master.wants_slot(now + 20.5)
    # A further failover during the delay keeps it too.
    assert master.record(EPOCH).restart_at is not None


def test_a_restart_delay_from_a_clock_far_ahead_is_held_to_the_strategys_delay() -> None:
    master = recovered(restarting_record(time.time() + 3600.0), delay=10.0)
    now = time.monotonic()
    assert not master.wants_slot(now + 9.0)
    assert master.wants_slot(now + 10.5)


def test_a_restart_already_due_starts_at_once() -> None:
    master = recovered(restarting_record(time.time() - 5.0), delay=10.0)
    assert master.state is JobState.SCHEDULED
    assert master.wants_slot(time.monotonic())
    old_record = recovered(restarting_record(None), delay=10.0)  # written before restart_at
    assert old_record.wants_slot(time.monotonic())


# ---------------------------------------------------------------- inherited attempts


def test_a_deployment_whose_command_never_left_was_never_sent() -> None:
    master = scheduled()
    deployment = master.deploy("tm-1", EPOCH)
    assert deployment.never_sent
    deployment.collected_at = NOW
    assert not deployment.never_sent


def test_an_adopted_attempt_was_sent_by_an_earlier_leader() -> None:
    master = make_master(FixedDelayRestart(attempts=3, delay=0.0))
    adopted = master.adopt("tm-1", 4, lease_epoch=EPOCH - 1, epoch=EPOCH)
    assert adopted.inherited
    assert not adopted.never_sent


def test_an_awaited_attempt_was_sent_by_an_earlier_leader() -> None:
    master = make_master()
    master.await_report(2, "tm-1", EPOCH - 1, until=NOW + 10)
    assert master.current is not None
    assert not master.current.never_sent


# ---------------------------------------------------------------- timeouts (issue 24)


def timed(timeout: float = 60.0, env: dict[str, str] | None = None) -> JobMaster:
    spec = JobSpec(job_id="job-1", restart_strategy=NoRestart(), timeout=timeout, env=env or {})
    master = JobMaster(spec, POINTER, submitted_at=123.0)
    master.initializing()
    assert master.initialized(FinishedEvent()) is None
    return master


def test_the_deadline_is_the_submission_plus_the_timeout() -> None:
    assert timed(60.0).deadline == 183.0
    assert make_master().deadline is None


def test_a_timed_out_job_waiting_for_a_slot_ends_canceled_with_reason_timeout() -> None:
    master = timed()
    master.timed_out = True
    terminal = master.cancel()
    assert terminal is not None and terminal.state is TerminalState.CANCELED
    assert terminal.error is not None and terminal.error.type == "steward.Timeout"
    assert master.reason is not None and master.reason.startswith("TIMEOUT")


def test_a_timed_out_running_job_ends_canceled_with_reason_timeout_when_its_attempt_ends() -> None:
    master = timed()
    master.deploy("tm-1", EPOCH)
    master.running(1, NOW)
    master.timed_out = True
    assert master.cancel() is None
    assert master.state is JobState.CANCELLING and master.record(EPOCH).timed_out
    cancelled = ErrorInfo(type=error_type_name(AttemptCancelled), message="cancelled")
    terminal = master.ended(1, FailedEvent(error=cancelled), now=NOW)
    assert terminal is not None and terminal.error is not None
    assert terminal.error.type == "steward.Timeout"


def test_a_new_leader_keeps_the_timeout_reason_of_a_job_being_cancelled() -> None:
    master = timed()
    master.deploy("tm-1", EPOCH)
    master.running(1, NOW)
    master.timed_out = True
    master.cancel()
    recovered = JobMaster(master.spec, POINTER, 123.0, record=master.record(EPOCH))
    assert recovered.cancel_requested and recovered.timed_out
    done = recovered.cancel()  # its attempt is gone: recovery settles the cancel
    assert done is not None and done.error is not None and done.error.type == "steward.Timeout"


def test_a_user_cancel_stays_a_user_cancel() -> None:
    terminal = timed().cancel()
    assert terminal is not None and terminal.error is None


def test_the_record_keeps_the_timeout_and_only_the_env_as_shown() -> None:
    master = timed(env={"GREETING": "hi", "DB_PASSWORD": "hunter22"})
    record = master.record(EPOCH)
    assert record.timeout == 60.0
    assert record.env == {"GREETING": "hi", "DB_PASSWORD": "*********(redacted)"}
    assert "hunter22" not in record.to_json().decode()
