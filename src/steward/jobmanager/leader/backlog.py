"""A scheduling pass over a backlog that cannot move looks only at the jobs new to it.

A full pass walks every job with no attempt in flight: with 10,000 waiting (a burst from an
orchestrator at midnight, faster than slots free up) that is about 20 ms of the leader's CPU
under the job table's lock, a submission waiting behind it for the lock, and it gives each
job the reason it already shows. Yet while no TaskManager has a free slot nothing can be
placed, and a waiting job's reason depends only on what :class:`Shape` holds (the
TaskManagers' slots, the slots each queue's attempts hold; the settings never change while
a JobManager runs), never on the other
waiting jobs (:meth:`.queues.QueuePass.reasons`). So when a pass finds no free slot and the
shape unchanged since the last full pass, it gives reasons only to the jobs that became idle
since (:attr:`.slot_use.SlotUse.arrived`: the submissions of the burst; a job whose
initialize hook ended is added there too, :meth:`.table.JobTable.now_wants_slot`) and adds
them to the queues' waiting counts.

Anything else runs the full pass, as before: a free slot, a changed shape, a job that left
the idle jobs (placed, cancelled, timed out), a limit that may hold jobs back
(``max_concurrent``, ``scheduling.max-concurrent``: those depend on other jobs), an attempt
given up. And at least every :data:`FULL_EVERY` seconds whatever happened (or, for a backlog
so large that a full pass costs more than :data:`FULL_SHARE` of that, every ``cost /
FULL_SHARE`` seconds: 2.5 s for a 50 ms pass over about 15,000 jobs): a job whose reason or
whose want of a slot changed without a change to the shape (a restart delay that ran out) is
seen by then, and it could not have been placed anyway before
a slot was free.
"""

from __future__ import annotations

from dataclasses import dataclass

from steward.wire.queues import QueueView

from .jobmaster import JobMaster
from .queues import QueuePass
from .table import JobTable

FULL_EVERY = 1.0
"""Seconds at most between two full passes, for a backlog whose full pass is cheap."""
FULL_SHARE = 0.02
"""The part of the leader's time the periodic full passes over a backlog may take."""


@dataclass(frozen=True)
class Shape:
    """What a waiting job's reason depends on, as one pass finds it."""

    taskmanagers: tuple[int, int, int]
    """Registered TaskManagers, the largest one's slots, their slots in all."""
    held: frozenset[tuple[str, int]]
    """Slots held by attempts in flight, by queue."""
    departures: int
    """Jobs that left the idle ones so far."""

    @classmethod
    def of(cls, table: JobTable) -> Shape:
        use = table.slot_use
        return cls(table.rm.shape(), frozenset(use.slots.items()), use.departures)


class WaitingReasons:
    """The reason the last passes gave a job that waits for a slot, by its queue and slots:
    a new job is stored with it (:mod:`.initialization`), so the pass that then finds it
    waiting has nothing to write (a burst of submissions cost a second status write a job,
    and a re-read and an event on every standby). Only a hint: a pass still writes any
    reason that differs. Read on any thread (the map is replaced whole)."""

    def __init__(self) -> None:
        self._reasons: dict[tuple[str, int], str] = {}

    def of(self, master: JobMaster) -> str | None:
        facts = master.facts
        return self._reasons.get((facts.queue, facts.slots))

    def found(self, plan: QueuePass, *, full: bool) -> None:
        """What ``plan``'s pass said; ``full``: of every waiting job (else of the new ones)."""
        self._reasons = plan.made if full else {**self._reasons, **plan.made}


class Backlog:
    """The last full pass's shape, time and queue views; under the job table's lock."""

    def __init__(self) -> None:
        self._shape: Shape | None = None
        self._at = 0.0
        self._every = FULL_EVERY
        self._views: list[QueueView] = []

    def unmoved(self, shape: Shape, now: float, table: JobTable) -> bool:
        """Whether a pass may look only at the jobs new since the last full pass."""
        return (
            shape == self._shape
            and now - self._at < self._every
            and table.rm.allocate(1) is None  # not one free slot: nothing can be placed
        )

    def full(self, plan: QueuePass, shape: Shape, now: float, cost: float) -> list[QueueView]:
        """A full pass that took ``cost`` seconds of CPU ended with ``shape``: its views. A
        pass some limit may have held jobs back in is not remembered (the next is full too)."""
        self._views = plan.views()
        self._shape = None if plan.concurrency.active else shape
        self._at = now
        self._every = max(FULL_EVERY, cost / FULL_SHARE)
        return self._views

    def added(self, plan: QueuePass) -> list[QueueView] | None:
        """The views once the new jobs ``plan`` holds wait too; None if a limit may hold one
        of them back (then the pass must be full)."""
        if plan.concurrency.active:
            self._shape = None
            return None
        waiting = {view.name: view.waiting for view in self._views}
        self._views = [
            view.model_copy(update={"waiting": view.waiting + waiting.get(view.name, 0)})
            for view in plan.views()
        ]
        return self._views
