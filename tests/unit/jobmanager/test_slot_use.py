"""The slots in use the job table keeps current (issue 22): a scheduling pass reads them instead
of walking every running job, so they must equal a count from scratch after anything the
leader does to an attempt: place, adopt, await, end, fail and restart, reject, lose, cancel.

Each test ends by checking the kept counts against :meth:`SlotUse.counted` over the table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.config.keys_scheduling import to_label_limits, to_queues
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.queues import QueuePass
from steward.jobmanager.leader.slot_use import SlotUse
from steward.jobmanager.leader.table import JobTable
from steward.testing.attempts import start_attempt
from steward.wire.heartbeat import Rejection, StartAttempt
from steward.wire.jobs import FixedDelayRestart, JobGraphPointer, JobSpec
from steward.wire.records import (
    AttemptRecord,
    ErrorInfo,
    ExecutionLease,
    JobStatusRecord,
    TaskManagerInfo,
)
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptState, JobState, TerminalState

EPOCH = 4
POINTER = JobGraphPointer(blob="b", sha256="0" * 64, epoch=1)
QUEUES = to_queues("etl:guarantee=0.5")
BOOM = ErrorInfo(type="ValueError", message="boom")


def waiting(job_id: str, queue: str = "etl", slots: int = 1, **spec: object) -> JobMaster:
    master = JobMaster(
        JobSpec(job_id=job_id, queue=queue, slots=slots, **spec),  # type: ignore[arg-type]
        POINTER,
        submitted_at=1.0,
    )
    master.initializing()
    master.initialized(FinishedEvent())
    return master


def table_with(*masters: JobMaster) -> JobTable:
    table = JobTable()
    for master in masters:
        table.admit(master)
        table.clear_of_results(master.job_id)  # as the result check does before a placement
    return table


def assert_counts_true(table: JobTable) -> None:
    assert table.slot_use == SlotUse.counted(table.jobs.values())


def used(table: JobTable, queue: str) -> tuple[int, int]:
    """(slots, running) of ``queue`` as a scheduling pass sees them."""
    plan = QueuePass(QUEUES, (), 10, table.slot_use)
    return plan.queues[queue].used, plan.queues[queue].running


def test_a_placed_attempt_holds_its_queue_name_and_labels_until_it_ends() -> None:
    master = waiting("a", slots=3, name="nightly", labels={"team": "ml"})
    table = table_with(master, waiting("idle"))
    table.place(master, "tm-1", EPOCH)
    assert used(table, "etl") == (3, 1)
    assert table.slot_use.names["nightly"] == 1 and table.slot_use.labels["team=ml"] == 1
    assert [m.job_id for m in table.idle()] == ["idle"]
    assert_counts_true(table)
    assert table.end(master, 1, FinishedEvent(), now=10.0) is not None
    assert used(table, "etl") == (0, 0)
    assert not table.slot_use.names and not table.slot_use.labels
    assert_counts_true(table)


def test_a_failed_attempt_frees_its_slots_and_the_restart_holds_them_again_once() -> None:
    master = waiting("a", slots=2, restart_strategy=FixedDelayRestart(attempts=3, delay=0))
    table = table_with(master)
    table.place(master, "tm-1", EPOCH)
    assert table.end(master, 1, FailedEvent(error=BOOM), now=10.0) is None
    assert master.state is JobState.RESTARTING and used(table, "etl") == (0, 0)
    assert table.idle() == [master]
    assert_counts_true(table)
    table.place(master, "tm-2", EPOCH)
    assert used(table, "etl") == (2, 1)
    assert_counts_true(table)


def running_record() -> JobStatusRecord:
    """Job "a" running attempt 2 on tm-1, as a new leader reads it after a failover."""
    return JobStatusRecord(
        job_id="a",
        state=JobState.RUNNING,
        submitted_at=1.0,
        updated_at=2.0,
        attempts=[AttemptRecord(number=2, taskmanager="tm-1", epoch=3, state=AttemptState.RUNNING)],
        attempt_count=2,
        epoch=3,
    )


def test_an_adopted_attempt_counts_against_its_queue_after_a_failover() -> None:
    record = running_record()
    spec = JobSpec(job_id="a", queue="etl", slots=2, name="nightly")
    master = JobMaster(spec, POINTER, 1.0, record=record)
    table = table_with(master)  # a new leader's recovery: admitted, then adopted
    assert used(table, "etl") == (0, 0)
    table.adopt(master, ExecutionLease(taskmanager="tm-1", attempt=2, epoch=3), EPOCH)
    assert used(table, "etl") == (2, 1) and table.slot_use.names["nightly"] == 1
    assert table.idle() == []
    assert_counts_true(table)


def test_a_job_admitted_for_adoption_is_counted_once_when_adopted() -> None:
    record = running_record()
    master = JobMaster(JobSpec(job_id="a", queue="etl", slots=2), POINTER, 1.0, record=record)
    table = JobTable()
    table.admit(master, adopting=True)  # a takeover's recovery from the record
    assert table.idle() == [] and used(table, "etl") == (0, 0)
    table.adopt(master, ExecutionLease(taskmanager="tm-1", attempt=2, epoch=3), EPOCH)
    assert used(table, "etl") == (2, 1) and table.idle() == []
    assert_counts_true(table)


def test_an_awaited_attempt_holds_its_slots_until_it_is_lost() -> None:
    master = waiting("a", slots=2)
    table = table_with(master)
    last = AttemptRecord(number=1, taskmanager="tm-1", epoch=3, state=AttemptState.RUNNING)
    table.await_report(master, last, until=50.0)
    assert used(table, "etl") == (2, 1) and table.awaiting_reports() == [master]
    assert_counts_true(table)
    table.lose(master, 1, BOOM, now=60.0, grace=5.0)
    assert used(table, "etl") == (0, 0) and table.awaiting_reports() == []
    assert not table.awaiting  # pruned: nothing kept for an attempt that is gone
    assert_counts_true(table)


def test_a_rejected_attempt_frees_its_slots() -> None:
    master = waiting("a")
    table = table_with(master)
    table.place(master, "tm-1", EPOCH)
    table.reject(master, 1, Rejection.NO_SLOT, "full", now=10.0)
    assert used(table, "etl") == (0, 0) and table.idle() == [master]
    assert_counts_true(table)


def test_a_cancel_withdrawn_before_collection_frees_at_once_a_collected_one_at_its_end() -> None:
    withdrawn, collected = waiting("withdrawn"), waiting("collected")
    table = table_with(withdrawn, collected)
    table.rm.set_members({"tm-1": TaskManagerInfo(address="http://tm-1", slots=4)})
    for master in (withdrawn, collected):
        deployment = table.place(master, "tm-1", EPOCH)
        table.rm.enqueue("tm-1", _start(master.job_id, deployment.number))
    assert collected.current is not None
    collected.current.reported = True  # its TaskManager took it: it runs until cancelled
    assert collected.cancel() is None
    assert table.withdraw(collected) is None and used(table, "etl") == (2, 2)
    withdrawn.cancel()
    terminal = table.withdraw(withdrawn)
    assert terminal is not None and terminal.state is TerminalState.CANCELED
    assert used(table, "etl") == (1, 1)
    assert table.rm.get("tm-1").assigned.keys() == {"collected"}  # type: ignore[union-attr]
    assert_counts_true(table)
    terminal = table.end(collected, 1, FailedEvent(error=BOOM), now=10.0)
    assert terminal is not None and terminal.state is TerminalState.CANCELED
    assert used(table, "etl") == (0, 0)
    assert_counts_true(table)


def _start(job_id: str, number: int) -> StartAttempt:
    return start_attempt(job_id, number, EPOCH)


def test_a_job_that_leaves_the_table_is_counted_nowhere() -> None:
    master = waiting("a", labels={"team": "ml"})
    table = table_with(master)
    table.place(master, "tm-1", EPOCH)
    table.forget(master)
    assert used(table, "etl") == (0, 0) and not table.slot_use.labels and not table.idle()
    assert_counts_true(table)
    table.end(master, 1, FinishedEvent(), now=1.0)  # a late transition of a job gone
    assert not table.slot_use.idle and not table.slot_use.held


def test_a_job_of_a_queue_no_longer_configured_holds_the_default_queue_s_slots() -> None:
    master = waiting("a", queue="gone", slots=2)
    table = table_with(master)
    table.place(master, "tm-1", EPOCH)
    assert used(table, "default") == (2, 1) and used(table, "etl") == (0, 0)


def test_a_limit_reads_the_kept_counts() -> None:
    running, next_ = waiting("a", labels={"team": "ml"}), waiting("b", labels={"team": "ml"})
    table = table_with(running, next_)
    plan = QueuePass(QUEUES, to_label_limits("team=ml:1"), 10, table.slot_use)
    assert plan.concurrency.held(next_) is None
    table.place(running, "tm-1", EPOCH)
    assert "labelled team=ml" in (plan.concurrency.held(next_) or "")


OPS = ("place", "finish", "fail", "reject", "lose", "cancel", "forget", "admit")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 4)), max_size=40))
def test_the_kept_counts_equal_a_count_from_scratch_after_any_sequence(
    steps: list[tuple[str, int]],
) -> None:
    table = JobTable()
    masters = [
        waiting(
            f"j{i}",
            queue=("etl", "default", "gone")[i % 3],
            slots=1 + i % 2,
            name=f"n{i % 2}",
            labels={"team": f"t{i % 2}"},
            restart_strategy=FixedDelayRestart(attempts=100, delay=0),
        )
        for i in range(5)
    ]
    for op, i in steps:
        _apply(table, op, masters[i])
        assert_counts_true(table)


def _apply(table: JobTable, op: str, master: JobMaster) -> None:
    live = table.jobs.get(master.job_id) is master
    current = master.current
    if op == "admit" and not live and not master.state.is_terminal:
        table.admit(master)
        table.clear_of_results(master.job_id)
    elif op == "place" and live and master.wants_slot(now=1e9):
        table.place(master, "tm-1", EPOCH)
    elif op == "forget" and live:
        table.forget(master)
    elif current is None or not live:
        return
    elif op == "finish":
        _settle(table, master, table.end(master, current.number, FinishedEvent(), now=0.0))
    elif op == "fail":
        _settle(table, master, table.end(master, current.number, FailedEvent(error=BOOM), now=0))
    elif op == "reject":
        table.reject(master, current.number, Rejection.NO_SLOT, "full", now=0.0)
    elif op == "lose":
        _settle(table, master, table.lose(master, current.number, BOOM, now=0.0, grace=0.0))
    elif op == "cancel":
        master.cancel()
        _settle(table, master, table.withdraw(master))


def _settle(table: JobTable, master: JobMaster, terminal: object) -> None:
    if terminal is not None:
        table.forget(master)  # as recording the result does


@pytest.mark.parametrize("jobs", [0, 3])
def test_counted_from_scratch_counts_each_job_once(jobs: int) -> None:
    masters = [waiting(f"j{i}") for i in range(jobs)]
    table = table_with(*masters)
    for master in masters:
        table.place(master, "tm-1", EPOCH)
    counted = SlotUse.counted([*table.jobs.values(), *table.jobs.values()])
    assert counted == table.slot_use and counted.slots["etl"] == jobs
