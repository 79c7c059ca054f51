"""Each report about an attempt a TaskManager's heartbeat carries, taken (:mod:`.heartbeats`).

A rejection (not run: no restart spent, rule 9), progress and the Spark application, numbered
checkpoints (acknowledged once in the CompletedCheckpointStore), and the outcome (acknowledged
once the status record or the result holds it, so a report survives a failover). A report
about an attempt this job is not waiting for (an old one, or one of a terminated or unknown
job) is a stray: it is told to stop. Called under the job table's lock.
"""

from __future__ import annotations

import logging

from steward.errors import FencedError, StewardError
from steward.wire.heartbeat import Ack, AttemptReport, CancelAttempt, lost_outcome
from steward.wire.records import CompletedCheckpoint
from steward.wire.runner_protocol import CheckpointEvent
from steward.wire.states import AttemptPhase, AttemptState, JobState

from .commands import send_cancel
from .context import TermContext
from .jobmaster import JobMaster
from .jobmaster_values import Deployment
from .membership import NOT_TAKEN
from .outcomes import AttemptOutcomes
from .records import Records

log = logging.getLogger(__name__)

SETTLED = (AttemptPhase.ENDED, AttemptPhase.REJECTED)
"""The phases of an attempt whose process group is gone (or never was)."""


class AttemptReports:
    def __init__(self, ctx: TermContext, records: Records) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._records = records
        self._outcomes = AttemptOutcomes(ctx, records)

    def quiet(self, tm_id: str, report: AttemptReport) -> bool:
        """Whether :meth:`take` of this report would write nothing and read no store (a
        heartbeat of only such reports may be taken on an event loop): an attempt already
        recorded running, with no new checkpoint, Spark application or outcome. Mirrors
        :meth:`take`; when in doubt, not quiet."""
        own = self._reported_on(tm_id, report)
        if own is None:
            # A stray is only cancelled (queued), unless it is the late outcome of a
            # lost attempt of a known job (:meth:`AttemptOutcomes.late_report` may write).
            known = report.job_id in self._table.jobs
            return not known or report.phase is not AttemptPhase.ENDED or not report.outcome
        master, current = own
        if report.phase in SETTLED or master.cancel_requested:
            return False
        if any(c.seq > current.checkpoint_acked for c in report.checkpoints):
            return False
        record = master.attempt(report.attempt)
        if record is None:
            return True  # nothing of it to record (see JobMaster.running and spark_app)
        started = record.state is AttemptState.RUNNING and bool(record.started_at)
        return started and report.spark_app in (None, record.spark_app)

    def _reported_on(
        self, tm_id: str, report: AttemptReport
    ) -> tuple[JobMaster, Deployment] | None:
        """The job and its current attempt, if ``report`` is of that attempt on ``tm_id``;
        None for a stray (an unknown job, another attempt, another TaskManager)."""
        master = self._table.jobs.get(report.job_id)
        current = master.current if master else None
        if (
            master is None
            or current is None
            or current.number != report.attempt
            or current.taskmanager != tm_id
        ):
            return None
        return master, current

    def take(self, tm_id: str, report: AttemptReport, news: dict[str, JobMaster]) -> list[Ack]:
        """Take one report of TaskManager ``tm_id``; a job whose record it changed lands in
        ``news`` (written by the caller, batched) unless it ends the attempt (written here: its
        outcome's ack waits for it)."""
        own = self._reported_on(tm_id, report)
        if own is None:
            return self._on_stray_report(tm_id, report)
        master = own[0]
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
        settled = report.phase in SETTLED
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
