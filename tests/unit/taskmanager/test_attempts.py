"""Attempts: the TaskManager's side of the heartbeat's reliable delivery.

Checkpoints are numbered per attempt and dropped only when acknowledged; an attempt is
forgotten only once its outcome is acknowledged and its lease released; slots are counted;
an attempt that ran can never be admitted again.
"""

from __future__ import annotations

import pytest

from steward.taskmanager.reporting import Attempt, Attempts
from steward.testing.attempts import start_attempt
from steward.wire.heartbeat import Ack, Rejection, StartAttempt
from steward.wire.runner_protocol import CheckpointEvent, FinishedEvent
from steward.wire.states import AttemptPhase


def command(job_id: str = "job-a", attempt: int = 1) -> StartAttempt:
    return start_attempt(job_id, attempt, epoch=3)


def admitted(attempts: Attempts, job_id: str = "job-a", attempt: int = 1) -> Attempt:
    found = attempts.admit(command(job_id, attempt), None, "")
    assert found is not None
    return found


def test_an_admitted_attempt_is_reported_starting_and_signals_a_change() -> None:
    attempts = Attempts(slots=2)

    admitted(attempts)

    assert attempts.changed.is_set()
    [report] = attempts.reports()
    assert (report.job_id, report.attempt, report.epoch) == ("job-a", 1, 3)
    assert report.phase is AttemptPhase.STARTING


def test_a_repeated_start_is_not_admitted_twice() -> None:
    attempts = Attempts(slots=2)
    admitted(attempts)

    assert attempts.admit(command(), None, "") is None
    assert len(attempts.all()) == 1


def test_a_start_beyond_the_slots_is_rejected_no_slot() -> None:
    attempts = Attempts(slots=1)
    admitted(attempts, "job-a")

    second = attempts.admit(command("job-b"), None, "")

    assert second is not None and second.phase is AttemptPhase.REJECTED
    assert second.rejection is Rejection.NO_SLOT
    assert second.lease_released
    assert attempts.used_slots() == 1


def test_resize_takes_the_jobs_slots_only_if_free() -> None:
    attempts = Attempts(slots=3)
    first, second = admitted(attempts, "job-a"), admitted(attempts, "job-b")

    assert attempts.resize(first, 2)
    assert not attempts.resize(second, 2)
    assert attempts.used_slots() == 3


def test_checkpoints_are_numbered_and_dropped_when_acknowledged() -> None:
    attempts = Attempts(slots=1)
    attempt = admitted(attempts)
    for batch in range(3):
        attempts.checkpoint(attempt, CheckpointEvent(metadata={"batchId": batch}))

    attempts.acknowledge(Ack(job_id="job-a", attempt=1, checkpoint_seq=2))

    [report] = attempts.reports()
    assert [(c.seq, c.event.metadata["batchId"]) for c in report.checkpoints] == [(3, 2)]


def test_an_ended_attempt_is_forgotten_only_when_acked_and_released() -> None:
    attempts = Attempts(slots=1)
    attempt = admitted(attempts)
    attempts.running(attempt, pid=123, started_at=1.0)
    attempts.end(attempt, FinishedEvent(value=7))

    attempts.acknowledge(Ack(job_id="job-a", attempt=1, outcome=True))
    assert attempts.get("job-a", 1) is attempt, "the lease is still held"

    attempts.released("job-a", 1)

    assert attempts.get("job-a", 1) is None
    assert attempts.admit(command(), None, "") is None, "an attempt that ran never runs again"


@pytest.mark.parametrize("order", ["ack-first", "release-first"])
def test_forgetting_does_not_depend_on_the_order(order: str) -> None:
    attempts = Attempts(slots=1)
    attempt = admitted(attempts)
    attempts.end(attempt, FinishedEvent(value=None))
    steps = [
        lambda: attempts.acknowledge(Ack(job_id="job-a", attempt=1, outcome=True)),
        lambda: attempts.released("job-a", 1),
    ]
    for step in steps if order == "ack-first" else reversed(steps):
        step()
    assert attempts.all() == []


def test_an_outcome_ack_for_a_running_attempt_is_ignored() -> None:
    attempts = Attempts(slots=1)
    attempt = admitted(attempts)
    attempts.running(attempt, pid=1, started_at=1.0)

    attempts.acknowledge(Ack(job_id="job-a", attempt=1, outcome=True))
    attempts.end(attempt, FinishedEvent(value=1))
    attempts.released("job-a", 1)

    assert attempts.get("job-a", 1) is attempt, "its outcome was never acknowledged"


def test_a_rejected_attempt_may_be_offered_again_once_acknowledged() -> None:
    attempts = Attempts(slots=1)
    rejected = attempts.admit(command(), Rejection.LEASE_HELD, "held")
    assert rejected is not None and rejected.phase is AttemptPhase.REJECTED

    attempts.acknowledge(Ack(job_id="job-a", attempt=1, outcome=True))

    assert attempts.get("job-a", 1) is None
    again = attempts.admit(command(), None, "")
    assert again is not None and again.phase is AttemptPhase.STARTING


def test_running_reports_a_cancel_that_arrived_while_starting() -> None:
    attempts = Attempts(slots=1)
    attempt = admitted(attempts)
    attempts.request_cancel(attempt, 4.0)

    assert attempts.running(attempt, pid=9, started_at=2.0) == 4.0
    assert attempt.phase is AttemptPhase.RUNNING
