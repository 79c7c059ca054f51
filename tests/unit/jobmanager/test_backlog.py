"""When a scheduling pass over a backlog may look only at the new jobs (``leader/backlog.py``),
and how often a full pass still runs: a pure function of the table's shape and the clock."""

from __future__ import annotations

from steward.jobmanager.leader.backlog import FULL_EVERY, FULL_SHARE, Backlog, Shape
from steward.jobmanager.leader.queues import QueuePass
from steward.jobmanager.leader.table import JobTable
from steward.wire.records import TaskManagerInfo


def _after_full_pass(table: JobTable, *, at: float, cost: float) -> Backlog:
    backlog = Backlog()
    backlog.full(QueuePass((), (), 0, table.slot_use), Shape.of(table), at, cost)
    return backlog


def test_a_cheap_full_pass_is_repeated_every_second_a_costly_one_less_often() -> None:
    table = JobTable()
    shape = Shape.of(table)
    cheap = _after_full_pass(table, at=100.0, cost=0.001)
    assert cheap.unmoved(shape, 100.0 + FULL_EVERY - 0.01, table)
    assert not cheap.unmoved(shape, 100.0 + FULL_EVERY, table)
    costly = _after_full_pass(table, at=100.0, cost=0.05)  # about 15,000 jobs waiting
    every = 0.05 / FULL_SHARE
    assert every > FULL_EVERY
    assert costly.unmoved(shape, 100.0 + every - 0.01, table)
    assert not costly.unmoved(shape, 100.0 + every, table)


def test_a_free_slot_a_new_member_or_a_job_gone_makes_the_next_pass_full() -> None:
    table = JobTable()
    table.rm.set_members({"tm-1": TaskManagerInfo(address="http://tm-1:1", slots=1)})
    table.rm.assign("tm-1", "job-running", 1, 1)  # its one slot is taken
    backlog = _after_full_pass(table, at=0.0, cost=0.001)
    assert backlog.unmoved(Shape.of(table), 0.5, table)

    table.slot_use.departures += 1  # a waiting job left: the queues' counts change
    assert not backlog.unmoved(Shape.of(table), 0.5, table)
    table.slot_use.departures -= 1

    table.rm.release("tm-1", "job-running", 1)  # a free slot: something can be placed
    assert not backlog.unmoved(Shape.of(table), 0.5, table)
    table.rm.assign("tm-1", "job-running", 1, 1)

    members = {
        "tm-1": TaskManagerInfo(address="http://tm-1:1", slots=1),
        "tm-2": TaskManagerInfo(address="http://tm-2:1", slots=0),
    }
    table.rm.set_members(members)  # another member: the shortage reads differently
    assert not backlog.unmoved(Shape.of(table), 0.5, table)
