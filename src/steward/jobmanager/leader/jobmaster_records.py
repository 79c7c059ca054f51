"""A :class:`~steward.jobmanager.leader.jobmaster.JobMaster` and its status record: the record it
persists on every transition, and what a new leader takes back from it (attempts, restart
budget, what is left of a restart delay, a cancel in progress and its reason)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from steward.wire.jobs import JobSpec
from steward.wire.records import MAX_ATTEMPTS_KEPT, JobStatusRecord
from steward.wire.states import JobState

from .restart import restart_delay

if TYPE_CHECKING:
    from .jobmaster import JobMaster


def status_record(master: JobMaster, epoch: int) -> JobStatusRecord:
    """What ``master`` persists under the leader's ``epoch``."""
    facts = master.facts
    return JobStatusRecord(
        job_id=facts.job_id,
        name=facts.name,
        state=master.state,
        reason=master.reason,
        submitted_at=master.submitted_at,
        updated_at=master.updated_at,
        attempts=master.attempts[-MAX_ATTEMPTS_KEPT:],
        attempt_count=master.attempt_count,
        failures=master.failures,
        restart_at=master.restart_at if master.state is JobState.RESTARTING else None,
        epoch=epoch,
        submitter=facts.submitter,
        team=facts.team,
        queue=facts.queue,
        priority=facts.priority,
        proxy_user=facts.proxy_user,
        labels=facts.labels,
        timeout=facts.timeout,
        timed_out=master.timed_out,
        env=master.shown_env,
        slots=facts.slots,
        max_concurrent=facts.max_concurrent,
        hookless=master.hookless,
    )


def restore(master: JobMaster, record: JobStatusRecord) -> None:
    """Continue ``master`` from the record an earlier leader wrote."""
    master.attempts = list(record.attempts)
    master.attempt_count = max(record.attempt_count, len(record.attempts))
    master.failures = record.failures
    master.submitted_at = record.submitted_at
    master.is_recovery = True
    master.hookless = record.hookless
    if record.state is JobState.RESTARTING and record.restart_at is not None:
        # What is left of the earlier leader's restart delay still holds.
        left = _delay_left(record.restart_at, master.spec, record.failures)
        if left > 0:
            master.restart_at = time.time() + left
            master.not_before = time.monotonic() + left
    # A cancel the user was told about (202) must survive a failover, with its reason.
    master.cancel_requested = record.state is JobState.CANCELLING
    master.timed_out = master.cancel_requested and record.timed_out


def _delay_left(restart_at: float, spec: JobSpec, failures: int) -> float:
    """Seconds left of an earlier leader's restart delay (``restart_at``: wall-clock time).

    At most the strategy's whole delay: a clock ahead on the earlier leader's host cannot hold
    the job back for longer than that.
    """
    whole = restart_delay(spec.restart_strategy, failures) or 0.0
    return min(max(0.0, restart_at - time.time()), whole)
