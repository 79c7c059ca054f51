"""The job table's own state changes: a submission's reservation of its id, and the writes
ZooKeeper refused, kept to be written again (the attempts' slots: ``test_slot_use.py``)."""

from __future__ import annotations

import pytest

from steward.errors import JobExistsError, NotReadyError
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.jobmaster_values import Terminal
from steward.jobmanager.leader.table import JobTable, UnclearedAttemptError
from steward.wire.jobs import JobGraphPointer, JobSpec
from steward.wire.states import TerminalState

POINTER = JobGraphPointer(blob="b", sha256="0" * 64, epoch=1, submission_sha256="a" * 64)


def master(job_id: str, timeout: float | None = None) -> JobMaster:
    return JobMaster(JobSpec(job_id=job_id, timeout=timeout), POINTER, submitted_at=1.0)


def test_an_id_being_submitted_is_refused_to_another_body_and_not_ready_for_the_same() -> None:
    table = JobTable()
    table.reserve("j", "a" * 64)
    with pytest.raises(NotReadyError, match="still being stored"):
        table.reserve("j", "a" * 64)
    with pytest.raises(JobExistsError):
        table.reserve("j", "b" * 64)
    table.unreserve("j")
    table.reserve("j", "b" * 64)  # free again once the first submission is over


def test_a_live_id_is_refused_with_the_digest_it_was_submitted_with() -> None:
    table = JobTable()
    table.admit(master("j"))
    with pytest.raises(JobExistsError) as refused:
        table.reserve("j", "a" * 64)
    assert refused.value.submission_sha256 == "a" * 64
    assert "j" not in table.submitting


def test_forget_takes_the_job_out_of_every_collection() -> None:
    table = JobTable()
    gone = master("j", timeout=10.0)
    table.admit(gone, hookless=True)
    assert "j" in table.hookless and len(table.deadlines) == 1
    table.forget(gone)
    assert not table.jobs and not table.hookless and len(table.deadlines) == 0


def test_refused_status_records_are_taken_once_and_only_for_live_jobs() -> None:
    table = JobTable()
    live, gone = master("live"), master("gone")
    table.admit(live)
    table.mark_unpersisted([live, gone])
    assert table.take_unpersisted() == [live]
    assert table.take_unpersisted() == []
    table.mark_unpersisted([live])
    assert table.unmark_unpersisted("live") and not table.unmark_unpersisted("live")


def test_a_refused_result_is_pending_until_taken_and_shows_the_job_meanwhile() -> None:
    table = JobTable()
    ended = master("j")
    table.pend_result(ended, Terminal(TerminalState.FINISHED))
    assert table.live_or_pending("j") is ended
    [pending] = table.take_pending_results()
    assert pending.master is ended and table.live_or_pending("j") is None


def test_deferred_status_writes_are_noted_then_taken_in_id_order() -> None:
    table = JobTable()
    b, a = master("b"), master("a")
    table.admit(b)
    table.admit(a)
    assert not table.defer([a])  # not deferring: the caller writes
    table.defer_status_writes()
    assert table.defer([b]) and table.defer([a])
    assert table.take_deferred() == [a, b]
    assert table.deferred is None


def test_no_attempt_is_placed_for_a_job_not_cleared_of_a_result() -> None:
    table, job = JobTable(), master("j")
    table.admit(job)
    with pytest.raises(UnclearedAttemptError, match="result check"):
        table.place(job, "tm-1", epoch=2)
    assert job.current is None


def test_a_job_that_leaves_the_table_is_no_longer_cleared() -> None:
    table, job = JobTable(), master("j")
    table.admit(job)
    table.clear_of_results("j")
    table.forget(job)
    table.admit(job)  # the same id again (a resubmission once retention removed its result)
    with pytest.raises(UnclearedAttemptError):
        table.place(job, "tm-1", epoch=2)
