"""The job table: the leader's in-memory jobs and slots, and every change made to them.

Heartbeats, scheduling passes, submissions, cancels, recovery and the initialize hooks' answers
all change the table, and only through its methods: which jobs are live, which are being
submitted, which attempts hold which TaskManager's slots, which writes ZooKeeper refused. A
part reads the collections freely under the lock, and never changes them itself.

Lock discipline: every caller holds :attr:`JobTable.lock` for its whole critical section (one
heartbeat, one scheduling pass, one submission's admission, one cancel), and the table's
methods assume it is held; the lock is re-entrant, so a part called under it may take it
again. ZooKeeper calls made under the lock are single round trips (a batched write counts as
one); a submission's graph and creates are stored outside it, its id reserved meanwhile
(:meth:`reserve`). The ResourceManager lives here because it is not thread-safe on its own.

An attempt in flight (:attr:`JobMaster.current`) holds slots on its TaskManager: every
transition that starts, adopts or ends one goes through a method here (:meth:`place`,
:meth:`adopt`, :meth:`await_report`, :meth:`end`, :meth:`lose`, :meth:`reject`,
:meth:`withdraw`), which assigns or releases the slots with it and keeps the slots in use per
queue, name and label current (:attr:`JobTable.slot_use`): a scheduling pass reads those, and
looks only at the jobs with no attempt in flight and the attempts awaiting a report, never at
every running job (issue 22). :meth:`place` places an attempt only of a job the term read to
have no result (:attr:`JobTable.cleared`, :mod:`.result_check`: rule 7).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from steward.errors import JobExistsError, NotReadyError
from steward.wire.heartbeat import Rejection
from steward.wire.records import AttemptRecord, ErrorInfo, ExecutionLease
from steward.wire.runner_protocol import FailedEvent, FinishedEvent

from .deadlines import Deadlines
from .jobmaster import JobMaster
from .jobmaster_values import Deployment, Terminal
from .resources import ResourceManager
from .slot_use import SlotUse

_T = TypeVar("_T")


class UnclearedAttemptError(RuntimeError):
    """A new attempt of a job the term has not read to have no result: a bug, not a state."""


@dataclass
class PendingResult:
    """A terminal outcome whose result ZooKeeper has not taken yet (retried every pass)."""

    master: JobMaster
    terminal: Terminal


@dataclass
class JobTable:
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[str, JobMaster] = field(default_factory=dict)
    """Live jobs (no result yet), by id."""
    pending_results: dict[str, PendingResult] = field(default_factory=dict)
    """Ended jobs whose result is still to be written."""
    submitting: dict[str, str | None] = field(default_factory=dict)
    """Ids whose job graph is being stored (outside the lock) by a submission, with the
    sha256 of that submission's body (so a retry of it is told from another job)."""
    unpersisted: set[str] = field(default_factory=set)
    """Jobs whose status record ZooKeeper refused: written again on the next pass."""
    hookless: set[str] = field(default_factory=set)
    """Jobs whose pipeline cannot define ``initialize``: no hook round, one status write."""
    deferred: set[str] | None = None
    """While recovering: jobs whose status record is written in batches before ready."""
    rm: ResourceManager = field(default_factory=ResourceManager)
    deadlines: Deadlines = field(default_factory=Deadlines)
    """Live jobs with a timeout, by deadline (:mod:`.deadlines`)."""
    slot_use: SlotUse = field(default_factory=SlotUse)
    """Slots held per queue, name and label; the live jobs with no attempt in flight."""
    awaiting: set[str] = field(default_factory=set)
    """Jobs whose attempt awaited a report or a loss (pruned by :meth:`awaiting_reports`)."""
    cleared: set[str] = field(default_factory=set)
    """Live jobs the term read to have no result: the only ones :meth:`place` places an
    attempt of (rule 7; :mod:`.result_check`)."""

    # ------------------------------------------------------------------ which jobs are live

    def admit(self, master: JobMaster, *, hookless: bool = False, adopting: bool = False) -> None:
        """``master`` is live: in the table, and its deadline (if any) watched; ``hookless``:
        its pipeline cannot define ``initialize``; ``adopting``: the caller adopts its
        attempt next (:meth:`adopt`), which counts its slots (a takeover counted each of
        10,000 jobs idle first, then held)."""
        job_id = master.job_id
        self.jobs[job_id] = master
        if hookless:
            self.hookless.add(job_id)
        if master.deadline is not None:
            self.deadlines.add(job_id, master.deadline)
        if not adopting:
            self._count(master)

    def forget(self, master: JobMaster) -> None:
        """The job leaves the table (its result is recorded, or its recovery is undone): its
        attempt's slots are free, its deadline no longer watched."""
        job_id = master.job_id
        self.jobs.pop(job_id, None)
        self.hookless.discard(job_id)
        self.deadlines.discard(job_id)
        self.slot_use.drop(job_id)
        self.awaiting.discard(job_id)
        self.cleared.discard(job_id)
        current = master.current
        if current is not None:
            self.rm.release(current.taskmanager, job_id, current.number)

    def live_or_pending(self, job_id: str) -> JobMaster | None:
        """The job's master, also while its result is still being written."""
        master = self.jobs.get(job_id)
        if master is None:
            pending = self.pending_results.get(job_id)
            master = pending.master if pending else None
        return master

    # ------------------------------------------------------------------ submissions

    def reserve(self, job_id: str, digest: str | None) -> None:
        """Mark ``job_id`` as being submitted (its graph stored outside the lock) by the body
        of sha256 ``digest``. Raises JobExistsError if the id is live or another body is
        being submitted under it, NotReadyError if this very body is (a retry whose first
        try's answer was lost while the store hung: neither "exists" nor a new job yet)."""
        master = self.jobs.get(job_id)
        if master is not None:
            stored = master.pointer.submission_sha256
            raise JobExistsError(job_id, "running submission", submission_sha256=stored)
        if job_id in self.submitting:
            if digest is not None and self.submitting[job_id] == digest:
                raise NotReadyError(f"the submission of job {job_id!r} is still being stored")
            raise JobExistsError(job_id, "running submission")
        self.submitting[job_id] = digest

    def unreserve(self, job_id: str) -> None:
        """The submission of ``job_id`` is over (admitted, or failed)."""
        self.submitting.pop(job_id, None)

    # ------------------------------------------------------------------ attempts and slots

    def clear_of_results(self, job_id: str) -> None:
        """The term read that the live job ``job_id`` has no result (:mod:`.result_check`)."""
        if job_id in self.jobs:
            self.cleared.add(job_id)

    def place(self, master: JobMaster, tm_id: str, epoch: int) -> Deployment:
        """Deploy the job's next attempt on ``tm_id``: its slots are taken there. Only a job
        the term cleared of a result gets one (rule 7): anything else is a bug, refused."""
        if master.job_id not in self.cleared:
            raise UnclearedAttemptError(
                f"attempt of job {master.job_id!r} placed before its result check (rule 7)"
            )
        deployment = master.deploy(tm_id, epoch)
        self.rm.assign(tm_id, master.job_id, deployment.number, master.facts.slots)
        self._count(master)
        return deployment

    def adopt(self, master: JobMaster, lease: ExecutionLease, epoch: int) -> Deployment:
        """The attempt holding the job's lease keeps running under ``epoch`` (rule 8), and
        holds its slots as if this leader had placed it."""
        deployment = master.adopt(lease.taskmanager, lease.attempt, lease.epoch, epoch)
        self.rm.assign(lease.taskmanager, master.job_id, lease.attempt, master.facts.slots)
        self._count(master)
        return deployment

    def await_report(self, master: JobMaster, last: AttemptRecord, until: float) -> None:
        """Recovery found the job's last attempt without a lease, its TaskManager alive: it
        holds its slots until the TaskManager reports it or ``until`` (monotonic) passes."""
        master.await_report(last.number, last.taskmanager, last.epoch, until)
        self.rm.assign(last.taskmanager, master.job_id, last.number, master.facts.slots)
        self._count(master)
        self.awaiting.add(master.job_id)

    def owe_loss(self, master: JobMaster, cause: ErrorInfo, now: float) -> None:
        """The attempt in flight is to be counted lost with ``cause`` on the next pass (its
        TaskManager left; its outcome record could not be read yet)."""
        current = master.current
        if current is not None:
            current.pending_loss, current.await_report_until = cause, now
            self.awaiting.add(master.job_id)

    def now_wants_slot(self, master: JobMaster) -> None:
        """``master``, with no attempt in flight all along, now wants a slot (its initialize
        hook ended): the next pass looks at it even over a backlog that cannot move
        (:mod:`.backlog`)."""
        if self.slot_use.idle.get(master.job_id) is master:
            self.slot_use.arrived.append(master)

    def idle(self) -> list[JobMaster]:
        """The live jobs with no attempt in flight (a copy: a pass may change the table)."""
        return list(self.slot_use.idle.values())

    def awaiting_reports(self) -> list[JobMaster]:
        """The jobs whose attempt in flight awaits its TaskManager's report, or a loss owed
        (:meth:`owe_loss`): what a pass must give up once due. Those no longer awaiting (the
        report came, the attempt ended, the job left) are forgotten here."""
        found = []
        for job_id in list(self.awaiting):
            master = self.jobs.get(job_id)
            current = master.current if master is not None else None
            if master is None or current is None or current.await_report_until is None:
                self.awaiting.discard(job_id)
            else:
                found.append(master)
        return found

    def reject(
        self, master: JobMaster, number: int, rejection: Rejection, message: str, *, now: float
    ) -> Terminal | None:
        """Attempt ``number`` never ran (refused, never collected, its TaskManager gone
        before it took it): its slots are free, nothing is spent (rule 9)."""
        return self._ending(master, lambda: master.rejected(number, rejection, message, now=now))

    def end(
        self, master: JobMaster, number: int, outcome: FinishedEvent | FailedEvent, *, now: float
    ) -> Terminal | None:
        """Attempt ``number``'s process group is gone with ``outcome``: its slots are free."""
        return self._ending(master, lambda: master.ended(number, outcome, now=now))

    def lose(
        self, master: JobMaster, number: int, cause: ErrorInfo, *, now: float, grace: float
    ) -> Terminal | None:
        """Attempt ``number`` is LOST (its TaskManager and lease gone): its slots are free."""
        return self._ending(master, lambda: master.lost(number, cause, now=now, grace=grace))

    def withdraw(self, master: JobMaster) -> Terminal | None:
        """Cancel a job whose start command its TaskManager has not collected: the command is
        withdrawn, nothing ran, and the job is CANCELED (the terminal to record). None if the
        command was collected already: the attempt is to be cancelled on its TaskManager."""
        current = master.current
        if current is None or current.reported:
            return None
        if not self.rm.withdraw_start(current.taskmanager, master.job_id, current.number):
            return None
        return self._ending(master, master.withdrawn)

    def _ending(self, master: JobMaster, transition: Callable[[], _T]) -> _T:
        """Apply ``transition``; if it ended the attempt in flight, free that attempt's slots."""
        before = master.current
        answer = transition()
        if before is not None and master.current is not before:
            self.rm.release(before.taskmanager, master.job_id, before.number)
        self._count(master)
        return answer

    def _count(self, master: JobMaster) -> None:
        """Keep :attr:`slot_use` current for ``master`` (counted nowhere once it left)."""
        if self.jobs.get(master.job_id) is master:
            self.slot_use.sync(master)
        else:
            self.slot_use.drop(master.job_id)

    # ------------------------------------------------------------------ writes to retry

    def defer_status_writes(self) -> None:
        """From now until :meth:`take_deferred`, status writes are only noted (recovery)."""
        self.deferred = set()

    def defer(self, masters: list[JobMaster]) -> bool:
        """Note these jobs' status writes if writes are deferred; False if they are not."""
        if self.deferred is None:
            return False
        self.deferred.update(m.job_id for m in masters)
        return True

    def take_deferred(self) -> list[JobMaster]:
        """The live jobs whose status writes were deferred, by id; writes are no longer."""
        deferred, self.deferred = self.deferred or set(), None
        return [self.jobs[job_id] for job_id in sorted(deferred) if job_id in self.jobs]

    def mark_unpersisted(self, masters: list[JobMaster]) -> None:
        """ZooKeeper refused these jobs' status records: written again on the next pass."""
        self.unpersisted.update(m.job_id for m in masters)

    def take_unpersisted(self) -> list[JobMaster]:
        """The live jobs whose status record is to be written again, no longer marked: the
        caller writes them, and marks again what fails."""
        taken, self.unpersisted = self.unpersisted, set()
        return [self.jobs[job_id] for job_id in taken if job_id in self.jobs]

    def unmark_unpersisted(self, job_id: str) -> bool:
        """Whether the job's status record was to be written again; no longer marked."""
        if job_id not in self.unpersisted:
            return False
        self.unpersisted.discard(job_id)
        return True

    def pend_result(self, master: JobMaster, terminal: Terminal) -> None:
        """ZooKeeper refused the job's result: written again on the next pass."""
        self.pending_results[master.job_id] = PendingResult(master, terminal)

    def take_pending_results(self) -> list[PendingResult]:
        """The results to write again, no longer pending: the caller marks again what fails."""
        pending = list(self.pending_results.values())
        self.pending_results.clear()
        return pending
