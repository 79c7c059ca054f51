"""Scheduling: the loop that places jobs that want a slot on the TaskManagers' free slots.

A pass runs every ``TICK`` or as soon as something wakes it (a submission, an outcome, a member
change). Each pass, under the job table's lock: write again what ZooKeeper refused before,
cancel the jobs past their timeout (:mod:`.timeouts`), give up attempts whose awaited report
never came, then hand out the free slots fairly between queues, by priority then age within
one (:mod:`.queues`). A pass looks only at the jobs with no attempt in flight and the attempts
awaiting a report: the slots the running ones hold are counted by the job table as attempts
start and end (:mod:`.slot_use`). A job that finds no free slot, whose queue is at its
maximum or that a ``max_concurrent`` holds back waits in SCHEDULED with the reason shown; it
spends no restart (rule 9). A job is placed only once the term read that it has no result
(:mod:`.result_check`, rule 7). A deployment is persisted before its start command is queued,
and the command carries the term's epoch, which the TaskManager's lease checks (rule 3).
"""

from __future__ import annotations

import logging
import time

from pydantic import JsonValue

from steward.config import SchedulingSettings
from steward.errors import FencedError, StewardError
from steward.wire.heartbeat import StartAttempt
from steward.wire.queues import QueueList, QueueView
from steward.wire.records import MAX_EARLIER_APPS
from steward.wire.runner_protocol import completed_stages_of

from .backlog import Backlog, Shape, WaitingReasons
from .context import TermContext
from .jobmaster import JobMaster
from .jobmaster_values import Deployment
from .membership import Membership
from .queues import QueuePass
from .records import Records
from .result_check import ResultCheck
from .stores import checkpoint_dir
from .timeouts import Timeouts

log = logging.getLogger(__name__)

TICK = 0.2
"""Seconds between scheduling passes when nothing wakes the scheduler earlier."""
MIN_GAP = 0.05
"""Seconds at least between the starts of two passes. Every submission wakes the scheduler
and a pass walks every job, so a burst of a thousand submissions asked for hundreds of
passes a second; now a wake-up that comes sooner waits out the gap, and the pass then takes
up everything that came meanwhile. A wake-up after a quiet spell is answered at once."""
SHARE = 0.1
"""The part of the leader's time passes may take at most: a pass walks every waiting job,
so with a backlog of thousands (a burst faster than slots free up) each pass costs
milliseconds of CPU under the lock; the next then starts no sooner than ``1/SHARE - 1``
times that CPU time after the last one ended (and at least :data:`MIN_GAP` after it
started). At 10,000 waiting jobs (about 20 ms a pass) a freed slot waits up to 0.18 s more
for its next job; below about 3,000 (a pass under 5.5 ms) :data:`MIN_GAP` rules alone."""


class Scheduler:
    def __init__(
        self,
        ctx: TermContext,
        records: Records,
        membership: Membership,
        *,
        timeouts: Timeouts | None = None,
        reasons: WaitingReasons | None = None,
    ) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._records = records
        self._results = ResultCheck(ctx, records)
        self._membership = membership
        self._timeouts = timeouts
        self._refused: dict[int, str] = {}
        """This pass's slot counts no TaskManager had room for, with the reason shown."""
        self._queues: list[QueueView] = []
        self._capacity = 0
        self._backlog = Backlog()
        self._reasons = reasons or WaitingReasons()
        self.passes = 0
        """Passes done, whole (their writes made) since the term began."""
        self.looked_at = 0
        """How many waiting jobs the last pass looked at (all of them, or those new to a
        backlog that cannot move: :mod:`.backlog`)."""

    def run(self) -> None:
        """Scheduling passes until the term stops; a failed pass is retried, a fence ends it."""
        term = self._term
        started = ended = term.monotonic() - MIN_GAP
        cost = 0.0
        while not term.stopped.is_set():
            term.wakeup.wait(TICK)
            gap = next_start(started, ended, cost) - term.monotonic()
            if gap > 0:  # a clock set back waits no longer than a gap
                term.stopped.wait(min(gap, max(MIN_GAP, cost / SHARE)))
            term.wakeup.clear()
            if term.stopped.is_set():
                return
            started = term.monotonic()
            try:
                cost = self._pass()
            except FencedError as exc:
                term.fenced(exc)
                return
            except StewardError as exc:
                log.warning("scheduling pass failed, retrying error=%r", exc)
            except Exception:
                log.exception("scheduling pass crashed, retrying")
            ended = term.monotonic()

    def _pass(self) -> float:
        """One pass under the lock; the CPU time it took (its cost, whatever the lock's wait
        or ZooKeeper's answers took)."""
        self._membership.refresh_if_changed()
        with self._table.lock:
            cpu = time.thread_time()
            self.schedule_once()
            return time.thread_time() - cpu

    def schedule_once(self) -> None:
        """One pass; called under the job table's lock."""
        self._records.retry_unwritten()
        if self._timeouts is not None:
            self._timeouts.expire()
        self._refused.clear()
        now = self._term.monotonic()
        arrived = self._table.slot_use.take_arrived()
        expired = self._expire_awaited(now)
        waiting: list[JobMaster] = []
        if expired or not self._backlog_pass(arrived, now, waiting):
            self._full_pass(now, expired, waiting)
        # A burst of submissions waits for slots: their new reasons are written in batched
        # transactions, not one round trip each under the lock.
        self._records.persist_many(waiting)
        self.passes += 1

    def _full_pass(self, now: float, expired: set[str], waiting: list[JobMaster]) -> None:
        cpu = time.thread_time()
        plan = self._plan(now, expired)
        self._place(plan, waiting)
        self._explain(plan, waiting)
        self._reasons.found(plan, full=True)
        cost = time.thread_time() - cpu
        self._queues = self._backlog.full(plan, Shape.of(self._table), now, cost)
        self._capacity = plan.capacity
        self.looked_at = sum(queue.wanted for queue in plan.queues.values())

    def _backlog_pass(self, arrived: list[JobMaster], now: float, waiting: list[JobMaster]) -> bool:
        """The pass over a backlog that cannot move (:mod:`.backlog`): reasons for the jobs
        that arrived since the last pass, none for the others; False if it must be full."""
        table = self._table
        if not self._backlog.unmoved(Shape.of(table), now, table):
            return False
        idle, plan = table.slot_use.idle, self._new_plan()
        for master in arrived:
            if idle.get(master.job_id) is master and master.wants_slot(now):
                plan.wants(master)
        plan.ready()
        views = self._backlog.added(plan)
        if views is None:
            return False
        self._explain(plan, waiting)
        self._reasons.found(plan, full=False)
        self._queues, self._capacity = views, plan.capacity
        self.looked_at = sum(queue.wanted for queue in plan.queues.values())
        return True

    def queues(self) -> QueueList:
        """The queues as the latest pass found them (any thread: the list is replaced whole)."""
        views = self._queues or QueuePass(self._settings.queues, (), 0).views()
        return QueueList(queues=views, slots=self._capacity)

    @property
    def _settings(self) -> SchedulingSettings:
        return self._term.settings.scheduling

    def _new_plan(self) -> QueuePass:
        table, settings = self._table, self._settings
        return QueuePass(
            settings.queues, settings.label_limits, table.rm.capacity(), table.slot_use
        )

    def _plan(self, now: float, expired: set[str]) -> QueuePass:
        """The queues: the slots in use as the table keeps them, and each job with no attempt
        in flight that wants a slot in its queue's heap (but the ``expired``: given up, or
        their outcome not read yet). Running jobs are not looked at: at 10,000 of them,
        counting their slots in each pass cost milliseconds under the lock, five passes a
        second (issue 22)."""
        table, plan = self._table, self._new_plan()
        wanting = [
            master
            for master in table.idle()  # every waiting job each pass: kept lean
            if master.wants_slot(now) and not (expired and master.job_id in expired)
        ]
        wants = plan.wants
        for master in self._clear_ahead(wanting):
            wants(master)
        plan.ready()
        return plan

    def _clear_ahead(self, wanting: list[JobMaster]) -> list[JobMaster]:
        """The waiting jobs but those found to have a result (settled): the results of those
        not cleared yet are read in one batch (:mod:`.result_check`), if a slot is
        free for any of them. If the store does not answer, each is read when placed."""
        table = self._table
        if all(m.job_id in table.cleared for m in wanting) or table.rm.allocate(1) is None:
            return wanting  # nothing to read, or nothing could start
        try:
            return self._results.clear(wanting)
        except StewardError as exc:
            log.warning("results not checked ahead jobs=%d error=%r", len(wanting), exc)
            return wanting

    def _expire_awaited(self, now: float) -> set[str]:
        """Give up the attempts whose awaited report never came; the jobs dealt with this
        pass (given up, or their outcome not read yet): none of them is placed in it."""
        return {
            master.job_id
            for master in self._table.awaiting_reports()
            if self._membership.expire_awaited_report(master, now)
        }

    def _place(self, plan: QueuePass, waiting: list[JobMaster]) -> None:
        """Free slots to the neediest queue's first job until none is left or wanted."""
        while (queue := plan.neediest()) is not None:
            master = plan.pop(queue)
            held = plan.concurrency.held(master) or plan.over_maximum(queue, master, self._shortage)
            if held is not None:
                _wait(master, held, waiting)
            elif self._deploy(master, waiting):
                plan.started(master)
            elif self._no_room(1):
                return  # not one free slot: everything left waits

    def _explain(self, plan: QueuePass, waiting: list[JobMaster]) -> None:
        """Every job no slot went to says why (:meth:`QueuePass.reasons`); most say what they
        said last pass, which is compared here rather than in a call per job."""
        for master, reason in plan.reasons(self._shortage):
            if master.reason != reason:
                _wait(master, reason, waiting)

    def _shortage(self, slots: int) -> str:
        reason = self._refused.get(slots)
        if reason is None:
            reason = self._refused[slots] = self._table.rm.shortage(slots)
        return reason

    def _deploy(self, master: JobMaster, waiting: list[JobMaster]) -> bool:
        rm, slots = self._table.rm, master.facts.slots
        tm_id = None if self._no_room(slots) else rm.allocate(slots)
        if tm_id is None:
            _wait(master, self._shortage(slots), waiting)
            return False
        if not self._no_result(master, waiting):  # rule 7: a job with a result never starts
            return False
        if not self._graph_at_hand(master, waiting):  # only once a slot is there for it
            return False
        # The reasons name the free slots, which this deployment changes.
        self._refused.clear()
        # Read before anything changes: if this read fails the pass is retried with the job
        # still waiting; failing after deploy() would strand it with no start command sent.
        latest = self._stores.checkpoints(master.job_id).latest().checkpoint
        metadata = latest.metadata if latest else None
        deployment = self._table.place(master, tm_id, self._term.epoch)
        self._records.persist(master)
        rm.enqueue(tm_id, self._start_command(master, deployment, metadata))
        self._term.metrics.attempt_started(
            deployment.number, self._term.wall() - master.submitted_at
        )
        log.info(
            "attempt deployed job=%s attempt=%d tm=%s epoch=%d queue=%s",
            master.job_id,
            deployment.number,
            tm_id,
            self._term.epoch,
            master.facts.queue,
        )
        return True

    def _graph_at_hand(self, master: JobMaster, waiting: list[JobMaster]) -> bool:
        """Read the graph of a job recovered from its record (a no-op for any other) before
        its attempt is placed: a missing or corrupt graph fails the job with recovery's cause
        (rule 6), never an attempt; a store that does not answer leaves it waiting."""
        try:
            broken = master.read_graph()
        except StewardError as exc:
            log.warning("job graph not readable yet job=%s error=%r", master.job_id, exc)
            _wait(master, "waiting for its job graph to be read", waiting)
            return False
        if broken is not None:
            log.error("recovered job failed job=%s cause=%s", master.job_id, broken.message)
            self._records.terminate(master, master.fail(broken))
            return False
        return True

    def _no_result(self, master: JobMaster, waiting: list[JobMaster]) -> bool:
        """Whether the job may start a new attempt: the term read it has no result (rule 7,
        :mod:`.result_check`); one found settles the job. A store that does not answer
        leaves it waiting."""
        try:
            return self._results.cleared(master)
        except StewardError as exc:
            log.warning("result not checked yet job=%s error=%r", master.job_id, exc)
            _wait(master, "waiting for its result to be checked", waiting)
            return False

    def _no_room(self, slots: int) -> bool:
        """Whether a pass already found no room for this many slots or fewer: within a pass,
        under the lock, free slots only shrink, so a burst of waiting jobs costs one search
        and one reason per slot count, not a search of every TaskManager per job."""
        return any(refused <= slots for refused in self._refused)

    def _start_command(
        self, master: JobMaster, deployment: Deployment, metadata: dict[str, JsonValue] | None
    ) -> StartAttempt:
        return StartAttempt(
            job_id=master.job_id,
            attempt=deployment.number,
            epoch=self._term.epoch,
            job_graph_blob=master.pointer.blob,
            job_graph_sha256=master.pointer.sha256,
            checkpoint_dir=checkpoint_dir(self._term.config, master.job_id),
            is_recovery=master.is_recovery or deployment.number > 1,
            completed_stages=completed_stages_of(metadata),
            last_checkpoint=metadata,
            earlier_spark_apps=earlier_spark_apps(master, deployment.number),
        )


def next_start(started: float, ended: float, cost: float) -> float:
    """When the pass after one that ran from ``started`` to ``ended`` and took ``cost``
    seconds of CPU may start: at least :data:`MIN_GAP` after its start, and late enough that
    passes take at most :data:`SHARE` of the leader's time."""
    return max(started + MIN_GAP, ended + cost * (1 / SHARE - 1))


def _wait(master: JobMaster, reason: str, waiting: list[JobMaster]) -> None:
    if master.waiting(reason):
        waiting.append(master)


def earlier_spark_apps(master: JobMaster, number: int) -> list[str]:
    """The Spark applications recorded for the job's attempts before ``number``: the runner
    of attempt ``number`` kills those still on a standalone master (rule 4)."""
    ids = [a.spark_app.app_id for a in master.attempts if a.number < number and a.spark_app]
    return list(dict.fromkeys(ids))[-MAX_EARLIER_APPS:]
