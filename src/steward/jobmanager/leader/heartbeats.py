"""TaskManagers' heartbeats: their attempts' reports in, acknowledgements and commands out.

Every report about an attempt is handled here: a rejection (not run: no restart spent, rule 9),
progress and the Spark application, numbered checkpoints (acknowledged once in the
CompletedCheckpointStore), and the outcome (acknowledged once the status record or the result
holds it, so a report survives a failover). A report about an attempt this job is not waiting
for (an old one, or one of a terminated or unknown job) is a stray: it is told to stop. A start
command its TaskManager collected but never mentions is expired as a rejection.

A heartbeat is handled under the job table's lock; the long poll that holds an idle heartbeat
until a command is queued waits outside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from steward.errors import FencedError, StewardError
from steward.wire.heartbeat import (
    Ack,
    AttemptReport,
    CancelAttempt,
    Command,
    Heartbeat,
    HeartbeatReply,
    StartAttempt,
    lost_outcome,
)
from steward.wire.records import CompletedCheckpoint
from steward.wire.runner_protocol import CheckpointEvent
from steward.wire.states import AttemptPhase, JobState

from .commands import send_cancel
from .context import TermContext
from .jobmaster import JobMaster
from .membership import NOT_TAKEN
from .outcomes import AttemptOutcomes
from .records import Records

log = logging.getLogger(__name__)

_SETTLED = (AttemptPhase.ENDED, AttemptPhase.REJECTED)


class Heartbeats:
    def __init__(
        self, ctx: TermContext, records: Records, on_stranger: Callable[[], None] = lambda: None
    ) -> None:
        """``on_stranger``: called when a heartbeat comes from another incarnation of a
        TaskManager than the membership last read (see :meth:`heartbeat`)."""
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._on_stranger = on_stranger
        self._records = records
        self._outcomes = AttemptOutcomes(ctx, records)

    def heartbeat(self, beat: Heartbeat) -> HeartbeatReply:
        """Take a TaskManager's reports; answer with acknowledgements and its commands."""
        term, table = self._term, self._table
        with table.lock:
            state = table.rm.heartbeat(beat)
            stranger = _another_incarnation(beat, state.registered, state.incarnation)
            term.metrics.heartbeat_from(beat.taskmanager)
            acks: list[Ack] = []
            commands: list[Command] = []
            if term.ready.is_set() and not term.stopped.is_set():
                news: dict[str, JobMaster] = {}
                for report in beat.attempts:
                    acks.extend(self._on_report(beat.taskmanager, report, news))
                # One batched write for the whole heartbeat, not a round trip per attempt
                # under the lock: after a failover every adopted attempt's first report is
                # news, and 10 writes in a row held each heartbeat (and every other one) for
                # seconds at 1,000 adopted jobs.
                self._records.persist_many(list(news.values()))
                self._expire_uncollected(beat, state.assigned)
                commands = table.rm.take_commands(beat.taskmanager)
            wake = state.wake
        if stranger:
            # The TaskManager restarted (a new session owns its registration) and the
            # membership watch has not told yet, or never will (kazoo swallows a delete and
            # re-create that happen while this leader is disconnected): read it again now.
            log.info(
                "heartbeat from another incarnation tm=%s session=0x%x known=0x%x",
                beat.taskmanager,
                beat.session or 0,
                state.incarnation or 0,
            )
            self._on_stranger()
        # Hold the reply (long poll) unless it carries something the TaskManager waits for:
        # commands, or acks of outcomes and checkpoints. Plain acks of running attempts do not
        # count, or a busy TaskManager would never be held.
        fresh = any(report.checkpoints or report.phase in _SETTLED for report in beat.attempts)
        if not commands and not fresh and beat.wait > 0 and not term.stopped.is_set():
            wake.wait(min(beat.wait, 30.0))
            with table.lock:
                if term.ready.is_set() and not term.stopped.is_set():
                    commands = table.rm.take_commands(beat.taskmanager)
        for command in commands:
            if isinstance(command, StartAttempt):
                self._mark_collected(command.job_id, command.attempt, beat.seq)
        return HeartbeatReply(
            epoch=term.epoch, leader=term.jobmanager_id, commands=commands, acks=acks
        )

    def _mark_collected(self, job_id: str, attempt: int, seq: int | None) -> None:
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if master and master.current and master.current.number == attempt:
                master.current.collected_at = self._term.monotonic()
                master.current.collected_seq = seq

    def _expire_uncollected(self, beat: Heartbeat, assigned: dict[str, tuple[int, int]]) -> None:
        # A start command its TaskManager collected but never mentions (the reply was lost):
        # it never ran, so it is a rejection, not a failure. Only the attempts placed on this
        # TaskManager are looked at, so a heartbeat costs the same with 10 jobs or 10,000.
        # Only a heartbeat built after the collecting reply was handled can tell: an older one
        # may be taken up late (two sending threads, a table lock held for seconds).
        listed = {(r.job_id, r.attempt) for r in beat.attempts}
        horizon = 2 * self._term.settings.taskmanager.heartbeat_interval + 5.0
        now = self._term.monotonic()
        for job_id in list(assigned):
            master = self._table.jobs.get(job_id)
            current = master.current if master is not None else None
            if (
                master is None
                or current is None
                or current.taskmanager != beat.taskmanager
                or current.reported
                or current.collected_at is None
                or now - current.collected_at < horizon
                or (master.job_id, current.number) in listed
                or not _built_after_collection(beat, current.collected_seq)
            ):
                continue
            log.warning(
                "start command lost job=%s attempt=%d tm=%s",
                master.job_id,
                current.number,
                beat.taskmanager,
            )
            terminal = self._table.reject(
                master,
                current.number,
                NOT_TAKEN,
                "the TaskManager never took the attempt",
                now=now,
            )
            self._records.settle(master, terminal)

    def _on_report(
        self, tm_id: str, report: AttemptReport, news: dict[str, JobMaster]
    ) -> list[Ack]:
        """Take one report; a job whose record it changed lands in ``news`` (written by the
        caller, batched) unless it ends the attempt (written here: its outcome's ack waits for
        it)."""
        master = self._table.jobs.get(report.job_id)
        current = master.current if master else None
        if (
            master is None
            or current is None
            or current.number != report.attempt
            or current.taskmanager != tm_id
        ):
            return self._on_stray_report(tm_id, report)
        if report.phase is AttemptPhase.REJECTED:
            return self._on_rejected(tm_id, master, report)
        acked = self._record_checkpoints(master, report)
        if report.progress is not None:
            master.progress = report.progress
        app_changed = report.spark_app is not None and master.spark_app(
            report.attempt, report.spark_app
        )
        if report.phase is not AttemptPhase.ENDED:
            running = master.running(report.attempt, report.started_at)
            if running or app_changed or master.cancel_requested:
                if master.cancel_requested:
                    send_cancel(self._term, self._table.rm, master)
                news[master.job_id] = master
            return [Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=acked)]
        return self._on_ended(tm_id, master, report, acked)

    def _on_stray_report(self, tm_id: str, report: AttemptReport) -> list[Ack]:
        # Not the attempt this job is waiting for: an old one, or one of a job that is
        # terminated or unknown. If it still runs, it must stop; either way, forget it.
        late = self._outcomes.late_report(self._table.jobs.get(report.job_id), report)
        if late is not None:
            return late  # the outcome of an attempt counted lost, arriving late
        seq = max((c.seq for c in report.checkpoints), default=0)
        settled = report.phase in _SETTLED
        pending = self._table.pending_results.get(report.job_id)
        if pending is not None and settled:
            return []  # its outcome is being recorded: acknowledge once it is
        if not settled:
            self._cancel_stray(tm_id, report)
        return [
            Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=seq, outcome=settled)
        ]

    def _on_rejected(self, tm_id: str, master: JobMaster, report: AttemptReport) -> list[Ack]:
        terminal = self._table.reject(
            master,
            report.attempt,
            report.rejection or NOT_TAKEN,
            report.rejection_message or "refused",
            now=self._term.monotonic(),
        )
        self._records.settle(master, terminal)
        self._term.wakeup.set()
        return [Ack(job_id=report.job_id, attempt=report.attempt, outcome=True)]

    def _graph_at_hand(self, master: JobMaster) -> bool:
        """Read the graph of a job adopted from its record, which its outcome's handling
        needs (:meth:`JobMaster.read_graph`); False if the store did not answer."""
        try:
            master.read_graph()
        except StewardError as exc:
            log.warning("job graph not readable yet job=%s error=%r", master.job_id, exc)
            return False
        return True

    def _on_ended(
        self, tm_id: str, master: JobMaster, report: AttemptReport, acked: int
    ) -> list[Ack]:
        if not self._graph_at_hand(master):
            return []  # not acknowledged: the TaskManager sends the outcome again
        outcome = report.outcome or lost_outcome("the TaskManager reported no outcome")
        master.running(report.attempt, report.started_at)
        terminal = self._table.end(master, report.attempt, outcome, now=self._term.monotonic())
        self._term.metrics.attempt_ended(str(outcome.event))
        if master.state is JobState.RESTARTING:
            self._term.metrics.restart_scheduled(master.not_before - self._term.monotonic())
        if terminal is not None:
            done = self._records.terminate(master, terminal)
        else:
            done = self._records.persist(master)
            self._term.wakeup.set()
        log.info(
            "attempt ended job=%s attempt=%d tm=%s outcome=%s job_state=%s",
            master.job_id,
            report.attempt,
            tm_id,
            outcome.event,
            master.state,
        )
        return [
            Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=acked, outcome=done)
        ]

    def _cancel_stray(self, tm_id: str, report: AttemptReport) -> None:
        state = self._table.rm.get(tm_id)
        key = f"{report.job_id}/{report.attempt}"
        if state is None or key in state.stray_cancelled:
            return
        state.stray_cancelled.add(key)
        log.warning(
            "cancelling a stray attempt job=%s attempt=%d tm=%s",
            report.job_id,
            report.attempt,
            tm_id,
        )
        self._table.rm.enqueue(
            tm_id,
            CancelAttempt(
                job_id=report.job_id,
                attempt=report.attempt,
                epoch=self._term.epoch,
                grace=self._term.cancel_grace,
            ),
        )

    def _record_checkpoints(self, master: JobMaster, report: AttemptReport) -> int:
        """Add the report's new checkpoints to the store, in order; the last one stored."""
        current = master.current
        assert current is not None
        for reported in sorted(report.checkpoints, key=lambda c: c.seq):
            if reported.seq <= current.checkpoint_acked:
                continue
            try:
                self._add_checkpoint(master, report.attempt, reported.event)
            except FencedError as exc:
                self._term.fenced(exc)
                break
            except StewardError as exc:
                log.warning("checkpoint not recorded yet job=%s error=%r", master.job_id, exc)
                break
            current.checkpoint_acked = reported.seq
        return current.checkpoint_acked

    def _add_checkpoint(self, master: JobMaster, attempt: int, event: CheckpointEvent) -> None:
        fence, job_id = self._term.fence, master.job_id
        cid = self._stores.checkpoint_counter(job_id).get_and_increment(fence)
        checkpoint = CompletedCheckpoint(
            job_id=job_id,
            checkpoint_id=cid,
            attempt=attempt,
            created_at=event.at,
            metadata=event.metadata,
        )
        self._stores.checkpoints(job_id).add(fence, checkpoint)


def _built_after_collection(beat: Heartbeat, collected_seq: int | None) -> bool:
    """Whether ``beat`` was built after its TaskManager handled (or gave up) the reply that
    carried a start: then it lists the attempt if the TaskManager admitted it. Unknown for a
    TaskManager that numbers no heartbeat: the time horizon alone decides, as it used to."""
    if collected_seq is None or beat.settled is None:
        return True
    return beat.settled >= collected_seq


def _another_incarnation(beat: Heartbeat, registered: bool, known: int | None) -> bool:
    return registered and None not in (beat.session, known) and beat.session != known
