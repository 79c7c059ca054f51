"""The ResourceManager: which TaskManagers are alive, their slots, and their command queues.

Membership comes from ZooKeeper (``taskmanagers/<id>``, ephemeral): a TaskManager is alive
exactly as long as its session, which is also what owns its execution leases. Heartbeats add
what ZooKeeper does not know: the attempts a TaskManager runs. Commands wait in a per-TaskManager
queue until its next heartbeat collects them; a heartbeat waiting for commands (long polling)
is woken as soon as one is queued.

Not thread-safe on its own: the Dispatcher calls it under its lock. Only
:meth:`wait_for_commands` is meant to be called without that lock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from steward.wire.heartbeat import AttemptReport, CancelAttempt, Command, Heartbeat
from steward.wire.records import TaskManagerInfo
from steward.wire.rest import TaskManagerView
from steward.wire.states import AttemptPhase

from .long_poll import Wake


@dataclass(frozen=True)
class TakenReports:
    """A TaskManager's reports as a leader took them, and the digest it sent them with. One
    value, replaced whole: read without the table's lock."""

    digest: str
    attempts: list[AttemptReport]


@dataclass
class TaskManagerState:
    id: str
    address: str
    slots: int
    registered: bool = False
    incarnation: int | None = None
    """The ZooKeeper session that owns its registration: a TaskManager restarted under the same
    id is another incarnation, whose attempts and leases are not the old one's."""
    last_heartbeat: float | None = None
    reports: dict[str, AttemptReport] = field(default_factory=dict)
    """The attempts its last heartbeat listed, by job id."""
    assigned: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Attempts this leader placed here: job id -> (attempt, slots)."""
    commands: list[Command] = field(default_factory=list)
    http_address: str | None = None
    """Its HTTP port (attempts' logs), from its registration."""
    wake: Wake = field(default_factory=Wake)
    stray_cancelled: set[str] = field(default_factory=set)
    """``job/attempt`` of stray attempts a cancel was already sent for."""
    taken: TakenReports | None = None
    """Its last heartbeat's reports, if taking them again would change nothing: a heartbeat
    that says its reports are unchanged stands for them (:mod:`.heartbeats`)."""
    used: int | None = field(default=None, repr=False)
    """:meth:`used_slots` as last counted; None once an assignment or a report changed
    (a scheduling pass asks every TaskManager: counting each time walked every attempt)."""

    def live_reports(self) -> dict[str, AttemptReport]:
        """The attempts its last heartbeat says still have a process group (or are starting
        one); an ENDED or REJECTED report only waits for this leader to collect it."""
        return {
            job_id: report
            for job_id, report in self.reports.items()
            if report.phase in (AttemptPhase.STARTING, AttemptPhase.RUNNING)
        }

    def used_slots(self) -> int:
        if self.used is None:
            used = sum(slots for _attempt, slots in self.assigned.values())
            # Attempts it runs that this leader did not place (e.g. of a job it does not
            # know): they occupy a slot until they are gone.
            used += sum(1 for job_id in self.live_reports() if job_id not in self.assigned)
            self.used = used
        return self.used

    def free_slots(self) -> int:
        return max(0, self.slots - self.used_slots())


class ResourceManager:
    def __init__(self) -> None:
        self._tms: dict[str, TaskManagerState] = {}

    # ------------------------------------------------------------------ membership

    def set_members(
        self, members: dict[str, TaskManagerInfo], incarnations: Mapping[str, int] | None = None
    ) -> list[str]:
        """The registered TaskManagers now, with the session owning each registration if known;
        returns the ids whose incarnation is gone: no longer registered, or registered again
        by a new process (its registration owned by another session)."""
        incarnations = incarnations or {}
        gone = [
            tm
            for tm, state in self._tms.items()
            if state.registered
            and (tm not in members or _reborn(state.incarnation, incarnations.get(tm)))
        ]
        for tm_id in gone:
            state = self._tms.pop(tm_id)
            state.wake.set()
        for tm_id, info in members.items():
            state = self._tms.setdefault(
                tm_id, TaskManagerState(tm_id, info.address, info.slots, True)
            )
            state.registered = True
            state.address, state.slots = info.address, info.slots
            state.http_address = info.http_address
            state.incarnation = incarnations.get(tm_id, state.incarnation)
        return gone

    def is_registered(self, tm_id: str) -> bool:
        state = self._tms.get(tm_id)
        return state is not None and state.registered

    def get(self, tm_id: str) -> TaskManagerState | None:
        return self._tms.get(tm_id)

    def heartbeat(self, beat: Heartbeat) -> TaskManagerState:
        state = self._tms.get(beat.taskmanager)
        if state is None:
            # Heartbeat before the membership watch saw its registration: known, not schedulable.
            state = TaskManagerState(beat.taskmanager, beat.address, beat.slots, registered=False)
            self._tms[beat.taskmanager] = state
        state.address, state.slots = beat.address, beat.slots
        state.last_heartbeat = time.monotonic()
        state.reports = {report.job_id: report for report in beat.attempts}
        state.taken = None
        state.used = None
        return state

    # ------------------------------------------------------------------ slots

    def allocate(self, slots: int) -> str | None:
        """The registered TaskManager with the most free slots (at least ``slots``), or None."""
        fit = (s for s in self._tms.values() if s.registered and s.free_slots() >= slots)
        # The lowest id among the freest: the same choice each time for the same slots.
        best = min(fit, key=lambda s: (-s.free_slots(), s.id), default=None)
        return best.id if best else None

    def capacity(self) -> int:
        """Slots of every registered TaskManager: what the queues' shares are shares of."""
        return sum(s.slots for s in self._tms.values() if s.registered)

    def shape(self) -> tuple[int, int, int]:
        """Registered TaskManagers, the largest one's slots, and their slots in all: what the
        reasons of :meth:`shortage` and the queues' shares depend on."""
        registered = [s.slots for s in self._tms.values() if s.registered]
        return len(registered), max(registered, default=0), sum(registered)

    def assign(self, tm_id: str, job_id: str, attempt: int, slots: int) -> None:
        state = self._tms.get(tm_id)
        if state is not None:
            state.assigned[job_id] = (attempt, slots)
            state.used = None

    def release(self, tm_id: str, job_id: str, attempt: int) -> None:
        state = self._tms.get(tm_id)
        if state is not None and state.assigned.get(job_id, (None,))[0] == attempt:
            del state.assigned[job_id]
            state.used = None

    def shortage(self, slots: int) -> str:
        """Why no TaskManager can take ``slots`` slots now, for the job's reason.

        The reason names no free-slot count: it is written into every waiting job's status
        record when it changes, and a count that moved with each attempt's start and end
        would rewrite thousands of waiting jobs' records each time (and grow with the
        TaskManagers). The free slots are in ``/v1/cluster`` and ``steward queues``."""
        registered = [s.slots for s in self._tms.values() if s.registered]
        if not registered:
            return "waiting for a TaskManager to register"
        largest = max(registered)
        if largest < slots:
            return f"waiting for a TaskManager with {slots} slot(s) (largest registered: {largest})"
        return f"waiting for {slots} free slot(s) on one TaskManager ({len(registered)} registered)"

    # ------------------------------------------------------------------ commands

    def enqueue(self, tm_id: str, command: Command) -> None:
        state = self._tms.get(tm_id)
        if state is None:
            return
        state.commands.append(command)
        state.wake.set()

    def withdraw_start(self, tm_id: str, job_id: str, attempt: int) -> bool:
        """Remove a start command not yet collected; True if it was still queued."""
        state = self._tms.get(tm_id)
        if state is None:
            return False
        before = len(state.commands)
        state.commands = [
            c
            for c in state.commands
            if isinstance(c, CancelAttempt) or (c.job_id, c.attempt) != (job_id, attempt)
        ]
        return len(state.commands) < before

    def take_commands(self, tm_id: str) -> list[Command]:
        state = self._tms.get(tm_id)
        if state is None:
            return []
        commands, state.commands = state.commands, []
        state.wake.clear()
        return commands

    def wake_event(self, tm_id: str) -> Wake | None:
        state = self._tms.get(tm_id)
        return state.wake if state else None

    def wake_all(self) -> None:
        for state in self._tms.values():
            state.wake.set()

    # ------------------------------------------------------------------ views

    def views(self) -> list[TaskManagerView]:
        now = time.monotonic()
        return [
            TaskManagerView(
                id=s.id,
                address=s.address,
                slots=s.slots,
                free_slots=s.free_slots(),
                attempts=sorted(set(s.assigned) | set(s.live_reports())),
                http_address=s.http_address,
                heartbeat_age=(
                    None if s.last_heartbeat is None else round(now - s.last_heartbeat, 3)
                ),
            )
            for s in sorted(self._tms.values(), key=lambda s: s.id)
            if s.registered
        ]


def _reborn(known: int | None, now: int | None) -> bool:
    return known is not None and now is not None and known != now
