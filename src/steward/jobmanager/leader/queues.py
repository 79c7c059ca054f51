"""Queues: which waiting job a free slot goes to, fair between queues (``scheduling.queues``).

Each scheduling pass builds a :class:`QueuePass` from the slots in use the job table keeps
current (:mod:`.slot_use`: per queue, the slots its attempts in flight hold) and a walk over
the jobs with no attempt in flight: a heap per queue of its jobs that want a slot, ordered by
priority (higher first) then submission (older first). Each free slot then goes to
:meth:`QueuePass.neediest`: among the queues with a job waiting and room under their maximum,
the one furthest below its guarantee (used / guaranteed slots, among those owed a whole slot);
once every such queue has its guarantee, the one with the least use beyond it per unit of
weight. A pass costs a walk over the waiting jobs (never the running ones), one heapify per
queue and a pop per placement, never a sort of every waiting job; each job left waiting is
then given its reason (:meth:`QueuePass.reasons`).

Limits that hold a job back whatever its queue (its name's ``max_concurrent``, a label's
``scheduling.max-concurrent``) are :class:`Concurrency`'s. Nothing here preempts: a queue
over its share only stops getting slots until its attempts end.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from steward.config import DEFAULT_QUEUE, LabelLimit, QueueSpec, SchedulingSettings
from steward.errors import JobRejectedError
from steward.wire.jobs import JobSpec
from steward.wire.queues import QueueView

from .jobmaster import JobMaster
from .slot_use import SlotUse

_Entry = tuple[int, float, str, JobMaster]
"""A waiting job in its queue's heap: (-priority, submitted_at, job id, master); ids are
unique, so two masters are never compared."""


def check_queue(spec: JobSpec, settings: SchedulingSettings) -> None:
    """Refuse a job naming a queue this cluster does not have (before anything is stored)."""
    if settings.queue(spec.queue) is None:
        known = ", ".join(queue.name for queue in settings.queues)
        raise JobRejectedError(f"spec.queue: no queue {spec.queue!r}; this cluster has: {known}")


@dataclass
class QueueUse:
    """One queue during a pass: the slots it holds and the jobs it has waiting."""

    spec: QueueSpec
    capacity: int = 0
    """All registered slots, this pass."""
    use: SlotUse = field(default_factory=SlotUse)
    """The slots in use, kept current as attempts start and end (the job table's)."""
    catch_all: frozenset[str] | None = None
    """For the default queue: the configured queues' names. A job naming a queue not among
    them counts against this one."""
    cap: int = field(init=False, default=1)
    """The slots it may hold this pass (:meth:`max_slots`)."""
    waiting: list[_Entry] = field(default_factory=list)
    """A heap of its jobs that want a slot."""
    wanted: int = 0
    """How many of its jobs wanted a slot at the start of the pass."""
    placed: int = 0
    """How many of those got one."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def used(self) -> int:
        """Slots held by its jobs' attempts in flight."""
        return self.use.slots_of(self.name, self.catch_all)

    @property
    def running(self) -> int:
        """Its jobs with an attempt in flight."""
        return self.use.running_of(self.name, self.catch_all)

    def __post_init__(self) -> None:
        self.cap = self.max_slots(self.capacity)

    def max_slots(self, capacity: int) -> int:
        """Slots it may hold: its maximum share, at least one slot so no queue is shut."""
        return max(1, math.floor(self.spec.maximum * capacity + 1e-9))

    def guaranteed_slots(self, capacity: int) -> float:
        return self.spec.guarantee * capacity

    def head(self) -> JobMaster:
        return self.waiting[0][3]

    def at_maximum(self, slots: int = 1) -> bool:
        """Whether ``slots`` more would put it past its maximum."""
        return self.used + slots > self.cap

    def rank(self, capacity: int) -> tuple[int, float, str]:
        """Lower is needier: owed a whole slot of its guarantee first (the furthest below it
        first), then the least use past its guarantee per unit of weight. Whole slots: a
        guarantee of 0.4 slot must not take a slot from a queue owed its eighth."""
        guaranteed = self.guaranteed_slots(capacity)
        if self.used + 1 <= guaranteed + 1e-9:
            return (0, self.used / guaranteed, self.name)
        return (1, (self.used - guaranteed) / self.spec.weight, self.name)

    def full_reason(self, capacity: int) -> str:
        return (
            f"queue {self.name!r} is at its maximum share ({self.spec.maximum:.0%} of"
            f" {capacity} slot(s) = {self.max_slots(capacity)}); waiting for one of its"
            " attempts to end"
        )

    def view(self, capacity: int) -> QueueView:
        return QueueView(
            name=self.name,
            guarantee=self.spec.guarantee,
            maximum=self.spec.maximum,
            weight=self.spec.weight,
            running=self.running,
            waiting=self.wanted - self.placed,
            slots_used=self.used,
            guaranteed_slots=round(self.guaranteed_slots(capacity), 3),
            max_slots=self.max_slots(capacity),
            share=round(self.used / capacity, 4) if capacity else 0.0,
        )


class Concurrency:
    """Running jobs per name (a job's own ``max_concurrent``) and per limited label, as the
    job table keeps them (:class:`~.slot_use.SlotUse`)."""

    def __init__(self, limits: tuple[LabelLimit, ...], use: SlotUse) -> None:
        self._limits = limits
        self.active = bool(limits)
        """Whether any job this pass may be held back (asked of every waiting job if so)."""
        self._names: Counter[str] = use.names
        self._labels: Counter[str] = use.labels

    def held(self, master: JobMaster) -> str | None:
        """Why ``master`` may not start now, or None."""
        facts = master.facts
        if facts.max_concurrent is None and not self._limits:
            return None  # the common case, asked of every waiting job each pass
        if facts.max_concurrent is not None and self._names[facts.name] >= facts.max_concurrent:
            return (
                f"held by max_concurrent={facts.max_concurrent}: that many jobs named"
                f" {facts.name!r} have an attempt"
            )
        for limit in self._limited(master):
            if self._labels[limit.label] >= limit.limit:
                return (
                    f"held by scheduling.max-concurrent: {limit.limit} job(s) labelled"
                    f" {limit.label} have an attempt"
                )
        return None

    def _limited(self, master: JobMaster) -> Iterator[LabelLimit]:
        labels = master.facts.labels
        return (limit for limit in self._limits if labels.get(limit.key) == limit.value)


class QueuePass:
    """The queues as one scheduling pass finds them (built and used under the table's lock).

    ``use``: the slots in use, which the job table keeps current as the pass places attempts
    (a pass of its own, for a test or a replay, counts in a fresh one: :meth:`holding`)."""

    def __init__(
        self,
        queues: tuple[QueueSpec, ...],
        limits: tuple[LabelLimit, ...],
        capacity: int,
        use: SlotUse | None = None,
    ) -> None:
        self.capacity = capacity
        self.use = use = SlotUse() if use is None else use
        names = frozenset(spec.name for spec in queues) | {DEFAULT_QUEUE}
        self.queues = {
            spec.name: QueueUse(spec, capacity, use, _catch_all(spec.name, names))
            for spec in queues
        }
        # Configured queues always hold it (to_queues); a hand-built list gets one at 0 %.
        self._default = self.queues.setdefault(
            DEFAULT_QUEUE, QueueUse(QueueSpec(DEFAULT_QUEUE, 0.0), capacity, use, names)
        )
        self.concurrency = Concurrency(limits, use)
        self.made: dict[tuple[str, int], str] = {}
        """The reasons :meth:`reasons` gave, by queue and slots (none held by a limit)."""

    def queue_of(self, master: JobMaster) -> QueueUse:
        """Its queue; a queue no longer configured is the default one's (nothing strands)."""
        return self.queues.get(master.facts.queue) or self._default

    def holding(self, master: JobMaster) -> None:
        """``master`` has an attempt in flight: its slots count against its queue (once; the
        job table counts the attempts it places itself)."""
        self.use.hold(master)

    def wants(self, master: JobMaster) -> None:
        facts = master.facts  # never the spec: a recovered job's graph is read when placed
        queue = self.queues.get(facts.queue) or self._default
        queue.waiting.append((-facts.priority, master.submitted_at, facts.job_id, master))
        if facts.max_concurrent is not None:
            self.concurrency.active = True

    def ready(self) -> None:
        """Every job is in: order each queue's heap."""
        for queue in self.queues.values():
            heapq.heapify(queue.waiting)
            queue.wanted = len(queue.waiting)

    def neediest(self) -> QueueUse | None:
        """The queue the next free slot goes to, or None: none has a job it may start."""
        capacity = self.capacity
        candidates = [
            queue for queue in self.queues.values() if queue.waiting and not queue.at_maximum()
        ]
        return min(candidates, key=lambda queue: queue.rank(capacity), default=None)

    def pop(self, queue: QueueUse) -> JobMaster:
        return heapq.heappop(queue.waiting)[3]

    def over_maximum(
        self, queue: QueueUse, master: JobMaster, shortage: Callable[[int], str]
    ) -> str | None:
        """Why ``master`` may not start this pass when its slots would take ``queue`` past its
        maximum; None when they fit. Such a wide job does not hold back the narrower jobs
        behind it (as no free TaskManager wide enough does not)."""
        slots = master.facts.slots
        return self._reason(queue, slots, shortage) if queue.at_maximum(slots) else None

    def started(self, master: JobMaster) -> None:
        self.queue_of(master).placed += 1
        self.holding(master)

    def reasons(self, shortage: Callable[[int], str]) -> Iterator[tuple[JobMaster, str]]:
        """Each job no slot went to this pass, with why: its limit, its queue's maximum, or
        ``shortage(slots)`` (no room). Asked of every waiting job each pass, so a queue's
        reason is made once per slot count."""
        limited = self.concurrency.active
        for queue in self.queues.values():
            made: dict[int, str] = {}
            for _priority, _at, _id, master in queue.waiting:
                reason = self.concurrency.held(master) if limited else None
                if reason is None:
                    slots = master.facts.slots
                    reason = made.get(slots)
                    if reason is None:
                        reason = made[slots] = self._reason(queue, slots, shortage)
                        self.made[queue.name, slots] = reason
                yield master, reason

    def _reason(self, queue: QueueUse, slots: int, shortage: Callable[[int], str]) -> str:
        # A maximum of every slot holds nothing back: then the want is of a free slot.
        if queue.cap < self.capacity and queue.at_maximum(slots):
            return queue.full_reason(self.capacity)
        return shortage(slots)

    def views(self) -> list[QueueView]:
        return [queue.view(self.capacity) for queue in self.queues.values()]


def _catch_all(name: str, names: frozenset[str]) -> frozenset[str] | None:
    return names if name == DEFAULT_QUEUE else None
