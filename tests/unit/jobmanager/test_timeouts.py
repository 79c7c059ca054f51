"""The leader's timeout pass: which live jobs it cancels as timed out, and which it leaves.

The term's fence and configuration, the stores and the hooks are not used by this logic:
placeholders stand in."""

from __future__ import annotations

from steward.jobmanager.leader.context import TermContext
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.table import JobTable
from steward.jobmanager.leader.term import Term
from steward.jobmanager.leader.timeouts import Timeouts
from steward.wire.jobs import JobGraphPointer, JobSpec
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import JobState

POINTER = JobGraphPointer(blob="jobgraphs/j/abc", sha256="0" * 64, epoch=1)


def _master(job_id: str, timeout: float | None) -> JobMaster:
    master = JobMaster(JobSpec(job_id=job_id, timeout=timeout), POINTER, submitted_at=100.0)
    master.initializing()
    master.initialized(FinishedEvent())
    return master


def _pass(table: JobTable, now: float) -> list[str]:
    cancelled: list[str] = []
    term = Term(1, fence=None, config=None, jobmanager_id="jm", wall=lambda: now)  # type: ignore[arg-type]
    ctx = TermContext(term, table, stores=None, hooks=None)  # type: ignore[arg-type]
    Timeouts(ctx, lambda master: cancelled.append(master.job_id)).expire()
    return cancelled


def test_only_jobs_past_their_deadline_are_cancelled_as_timed_out() -> None:
    table = JobTable()
    for job_id, timeout in (("due", 10.0), ("later", 60.0), ("none", None)):
        table.admit(_master(job_id, timeout))
    assert _pass(table, now=105.0) == []
    assert _pass(table, now=110.0) == ["due"]
    assert table.jobs["due"].timed_out and not table.jobs["later"].timed_out
    assert _pass(table, now=1000.0) == ["later"]


def test_an_ended_or_cancelling_job_is_left_alone() -> None:
    table = JobTable()
    ended, cancelling = _master("ended", 10.0), _master("cancelling", 10.0)
    ended.state = JobState.FINISHED  # its result is still being written: the outcome stands
    cancelling.cancel_requested = True  # a user's cancel came first
    table.admit(ended)
    table.admit(cancelling)
    assert _pass(table, now=200.0) == []
    assert not ended.timed_out and not cancelling.timed_out


def test_a_job_that_left_the_table_is_not_cancelled() -> None:
    table = JobTable()
    gone = _master("gone", 10.0)
    table.admit(gone)
    table.forget(gone)
    assert _pass(table, now=200.0) == []
