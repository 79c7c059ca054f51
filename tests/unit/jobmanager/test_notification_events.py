"""Which job events the leader writes to the notification outbox, under which id, and the
back-off of a webhook that does not answer.

The term's fence is not used by this logic: a placeholder stands in; the configuration is
real."""

from __future__ import annotations

import pytest

from steward.config import load
from steward.errors import JobRejectedError
from steward.jobmanager.leader.delivery import INITIAL_DELAY, MAX_DELAY, retry_delay
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.jobmaster_values import Terminal
from steward.jobmanager.leader.notifications import Notifications, check_targets
from steward.jobmanager.leader.term import Term
from steward.wire.job_options import TIMEOUT_ERROR_TYPE
from steward.wire.jobs import JobGraphPointer, JobSpec
from steward.wire.notifications import NotificationEvent, NotificationTarget
from steward.wire.records import ErrorInfo
from steward.wire.states import JobState, TerminalState

POINTER = JobGraphPointer(blob="jobgraphs/j/abc", sha256="0" * 64, epoch=1)
HOOK = "https://hooks.example.com/cluster"


def _notifications(**settings: str) -> Notifications:
    config = load(environ={}, overrides=settings)
    return Notifications(Term(1, fence=None, config=config, jobmanager_id="jm", wall=lambda: 5.0))  # type: ignore[arg-type]


def _master(job_id: str = "j", *targets: NotificationTarget, attempts: int = 1) -> JobMaster:
    master = JobMaster(JobSpec(job_id=job_id, notifications=list(targets)), POINTER, 1.0)
    master.attempt_count = attempts
    return master


def test_without_any_webhook_no_event_is_written() -> None:
    notifications = _notifications()
    assert notifications.of_end(_master(), Terminal(TerminalState.FAILED)) is None
    assert notifications.of_unrecoverable("j", ErrorInfo(type="X", message="m")) is None


def test_the_cluster_webhooks_get_only_the_events_configured() -> None:
    notifications = _notifications(
        **{"notifications.webhooks": HOOK, "notifications.events": "FAILED"}
    )
    assert notifications.of_end(_master(), Terminal(TerminalState.FINISHED)) is None
    record = notifications.of_end(_master(attempts=3), Terminal(TerminalState.FAILED))
    assert record is not None and record.cluster and not record.targets
    assert (record.event_id, record.attempt, record.at) == ("j:3:FAILED", 3, 5.0)


def test_a_job_webhook_gets_only_its_own_events() -> None:
    notifications = _notifications()
    target = NotificationTarget(url="https://h/x", events=[NotificationEvent.FINISHED])
    assert notifications.of_end(_master("j", target), Terminal(TerminalState.FAILED)) is None
    record = notifications.of_end(_master("j", target), Terminal(TerminalState.FINISHED))
    assert record is not None and not record.cluster
    assert [t.url for t in record.targets] == ["https://h/x"]


def test_a_job_cancelled_at_its_timeout_is_a_timeout_event_not_a_cancel() -> None:
    notifications = _notifications(**{"notifications.webhooks": HOOK})
    timed_out = ErrorInfo(type=TIMEOUT_ERROR_TYPE, message="timed out after 1m")
    record = notifications.of_end(_master(), Terminal(TerminalState.CANCELED, error=timed_out))
    assert record is not None and record.event is NotificationEvent.TIMEOUT
    assert record.event_id == "j:1:TIMEOUT" and record.state == "CANCELED"
    cancel = notifications.of_end(_master(), Terminal(TerminalState.CANCELED))
    assert cancel is not None and cancel.event is NotificationEvent.CANCELED


def test_an_event_carries_a_short_error_without_its_traceback() -> None:
    notifications = _notifications(**{"notifications.webhooks": HOOK})
    error = ErrorInfo(type="ValueError", message="x" * 5000, traceback="Traceback ...")
    record = notifications.of_end(_master(), Terminal(TerminalState.FAILED, error=error))
    assert record is not None and record.error is not None
    assert len(record.error.message) == 1000 and record.error.traceback is None
    assert len(record.to_json()) < 2000


def test_a_restart_is_written_once_per_attempt_and_not_again_after_recovery() -> None:
    notifications = _notifications(**{"notifications.webhooks": HOOK})
    master = _master(attempts=1)
    assert notifications.of_restart(master) is None  # not restarting
    master.state = JobState.RESTARTING
    record = notifications.of_restart(master)
    assert record is not None and record.event_id == "j:1:RESTARTED"
    notifications.restart_written(master)
    assert notifications.of_restart(master) is None
    master.attempt_count = 2
    assert notifications.of_restart(master) is not None
    # A new leader's: the record it recovered showed the restart, so its event was written
    successor = _notifications(**{"notifications.webhooks": HOOK})
    successor.recovered(master)
    assert successor.of_restart(master) is None


def test_retries_back_off_doubling_up_to_the_cap_jittered_down_by_at_most_half() -> None:
    assert retry_delay(1, rng=lambda: 1.0) == INITIAL_DELAY
    assert retry_delay(4, rng=lambda: 1.0) == INITIAL_DELAY * 8
    assert retry_delay(4, rng=lambda: 0.0) == INITIAL_DELAY * 4
    assert retry_delay(100, rng=lambda: 1.0) == MAX_DELAY


def test_a_job_webhook_outside_the_allowlist_is_refused_naming_the_field_not_its_token() -> None:
    settings = load(
        environ={}, overrides={"notifications.allowed-urls": "https://hooks.example.com/"}
    ).settings.notifications
    allowed = NotificationTarget(url="https://hooks.example.com/a?token=t")
    check_targets(JobSpec(job_id="j", notifications=[allowed]), settings)
    elsewhere = NotificationTarget(url="http://10.0.0.1/x?token=t")
    with pytest.raises(JobRejectedError, match=r"spec\.notifications") as refused:
        check_targets(JobSpec(job_id="j", notifications=[allowed, elsewhere]), settings)
    assert "token=t" not in str(refused.value)
    none_allowed = load(environ={}).settings.notifications
    with pytest.raises(JobRejectedError, match="none is allowed"):
        check_targets(JobSpec(job_id="j", notifications=[allowed]), none_allowed)
