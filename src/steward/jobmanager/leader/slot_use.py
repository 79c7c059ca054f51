"""Slots in use, kept current as attempts start and end (issue 22).

A scheduling pass needs, per queue, the slots its attempts in flight hold and how many jobs
hold them, and, per job name and per label, how many jobs have an attempt (``max_concurrent``
and ``scheduling.max-concurrent``). Counting them in every pass walked every running job under
the table's lock, five passes a second, heartbeats waiting behind it. :class:`SlotUse` keeps
the counts instead: the job table calls :meth:`SlotUse.sync` after every transition that can
start or end an attempt (:mod:`.table`), so a pass reads the counts and looks only at the jobs
with no attempt in flight (:attr:`SlotUse.idle`).

Counts are by the queue a job's spec names, not by the queue it is scheduled in: a queue no
longer configured is counted against the default one at the pass (:mod:`.queues`). A job's
spec never changes while it is live, so what it holds is noted once, when its attempt starts,
and taken back whole when it ends. :meth:`SlotUse.counted` counts from scratch: the tests
compare the two. Called under the job table's lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .jobmaster import JobMaster


@dataclass(frozen=True)
class _Held:
    """What one job's attempt in flight counts against (taken back whole when it ends)."""

    queue: str
    slots: int
    name: str
    labels: tuple[str, ...]
    """Its labels as ``key=value``: each may be limited (``scheduling.max-concurrent``)."""


@dataclass
class SlotUse:
    slots: Counter[str] = field(default_factory=Counter)
    """Slots held by attempts in flight, by the queue their job's spec names."""
    running: Counter[str] = field(default_factory=Counter)
    """Jobs with an attempt in flight, by queue."""
    names: Counter[str] = field(default_factory=Counter)
    """Jobs with an attempt in flight, by job name (named jobs only)."""
    labels: Counter[str] = field(default_factory=Counter)
    """Jobs with an attempt in flight, by label ``key=value``."""
    held: dict[str, _Held] = field(default_factory=dict)
    """The jobs counted above, by id."""
    idle: dict[str, JobMaster] = field(default_factory=dict)
    """Live jobs with no attempt in flight: the only ones a pass may give a slot."""
    arrived: list[JobMaster] = field(default_factory=list, compare=False)
    """The jobs that became idle since a pass last took them (:meth:`take_arrived`): what a
    pass over a backlog that cannot move looks at (:mod:`.backlog`)."""
    departures: int = field(default=0, compare=False)
    """How many times a job left :attr:`idle` (placed, or gone): a count a pass compares."""

    @classmethod
    def counted(cls, masters: Iterable[JobMaster]) -> SlotUse:
        """The use of these jobs, counted from scratch (what the kept counts must equal)."""
        use = cls()
        for master in masters:
            use.sync(master)
        return use

    def sync(self, master: JobMaster) -> None:
        """Count the live job as it is now: holding its slots while it has an attempt in
        flight, idle while not. Idempotent."""
        job_id = master.job_id
        if master.current is None:
            self._free(job_id)
            if job_id not in self.idle:
                self.arrived.append(master)
            self.idle[job_id] = master
        else:
            self._leave(job_id)
            self.hold(master)

    def drop(self, job_id: str) -> None:
        """The job left the table: counted nowhere."""
        self._free(job_id)
        self._leave(job_id)

    def take_arrived(self) -> list[JobMaster]:
        """The jobs that became idle since the last call (some may have left again)."""
        arrived, self.arrived = self.arrived, []
        return arrived

    def _leave(self, job_id: str) -> None:
        if self.idle.pop(job_id, None) is not None:
            self.departures += 1

    def hold(self, master: JobMaster) -> None:
        """Count ``master``'s slots as held (once: a job holds for one attempt at a time)."""
        job_id, spec = master.job_id, master.facts
        if job_id in self.held:
            return
        labels = tuple(f"{key}={value}" for key, value in spec.labels.items())
        held = self.held[job_id] = _Held(spec.queue, spec.slots, spec.name or "", labels)
        self.slots[held.queue] += held.slots
        self.running[held.queue] += 1
        if held.name:
            self.names[held.name] += 1
        for label in held.labels:
            self.labels[label] += 1

    def slots_of(self, queue: str, catch_all: frozenset[str] | None = None) -> int:
        """Slots held in ``queue``; with ``catch_all`` (the configured queues' names), also
        those of every queue not among them (the default queue takes them)."""
        return _in(self.slots, queue, catch_all)

    def running_of(self, queue: str, catch_all: frozenset[str] | None = None) -> int:
        """Jobs with an attempt in flight in ``queue`` (``catch_all`` as :meth:`slots_of`)."""
        return _in(self.running, queue, catch_all)

    def _free(self, job_id: str) -> None:
        held = self.held.pop(job_id, None)
        if held is None:
            return
        _take(self.slots, held.queue, held.slots)
        _take(self.running, held.queue, 1)
        if held.name:
            _take(self.names, held.name, 1)
        for label in held.labels:
            _take(self.labels, label, 1)


def _take(counts: Counter[str], key: str, n: int) -> None:
    # A key at zero goes: names and labels come and go, and nothing is kept for ever.
    left = counts[key] - n
    if left:
        counts[key] = left
    else:
        del counts[key]


def _in(counts: Counter[str], queue: str, catch_all: frozenset[str] | None) -> int:
    if catch_all is None:
        return counts[queue]
    return sum(n for name, n in counts.items() if name == queue or name not in catch_all)
