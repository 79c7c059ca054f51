"""What the leader writes about a job: its status record, and its result when it ends.

Every transition of a job is persisted to ``jobs/<job-id>/status`` through the fence (rule 2),
so standbys can answer reads and the next leader continues where this one stopped. A
globally terminal job gets its result entry created DIRTY first and is only then handed to
cleanup (rule 7); the first result recorded for a job stands. What ZooKeeper refuses is kept
(``unpersisted``, ``pending_results``) and written again on the next scheduling pass. An event
a webhook wants (:mod:`.notifications`) is written in the same transaction as the write that
makes it true, and handed to delivery once ZooKeeper took it. Called under the job table's
lock.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping

from steward.errors import FencedError, JobExistsError, StewardError
from steward.store.group_commit import Create
from steward.store.results import ResultTooLargeError
from steward.wire.notifications import NotificationRecord
from steward.wire.records import ErrorInfo, JobResultEntry, attempts_to_keep
from steward.wire.states import TerminalState

from .cleanup import Cleanup
from .context import TermContext
from .delivery import Delivery
from .jobmaster import JobMaster
from .jobmaster_values import Terminal
from .notifications import Notifications

log = logging.getLogger(__name__)


class Records:
    def __init__(self, ctx: TermContext, cleanup: Cleanup, delivery: Delivery) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._hooks = ctx.hooks
        self._cleanup = cleanup
        self._delivery = delivery
        self.notifications = Notifications(ctx.term)
        self._late: set[str] = set()
        """Jobs whose records :mod:`.late_records` is to write and no write of this term has
        since (a newer record: nothing late to write)."""

    def persist(self, master: JobMaster) -> bool:
        """Write the job's status record; False (retried later) if ZooKeeper is unreachable.

        During recovery the write is only noted: :meth:`flush_deferred` writes the noted
        records in a few batched transactions before the leader is ready (one write per job,
        made under the lock, used to bound recovery and so failover), but those of jobs
        recovered from their records, written after it (:mod:`.late_records`).
        """
        if self._table.defer([master]):
            return True
        try:
            self._write(master)
        except FencedError as exc:
            self._term.fenced(exc)
            return False
        except StewardError as exc:
            log.warning("job status not persisted yet job=%s error=%r", master.job_id, exc)
            self._table.mark_unpersisted([master])
            return False
        self._late.discard(master.job_id)
        return True

    def persist_many(self, masters: list[JobMaster]) -> None:
        """Write these jobs' status records in batched transactions (see :meth:`persist`)."""
        if self._table.defer(masters):
            return
        restarting = {m.job_id for m in masters if self.notifications.of_restart(m) is not None}
        for master in masters:
            if master.job_id in restarting:
                self.persist(master)  # a restart's event goes with its own record
        masters = [m for m in masters if m.job_id not in restarting]
        if len(masters) <= 1:
            for master in masters:
                self.persist(master)
            return
        try:
            records = [m.record(self._term.epoch) for m in masters]
            self._stores.statuses.write_many(self._term.fence, records)
        except FencedError as exc:
            self._term.fenced(exc)
        except StewardError as exc:
            log.warning("job statuses not persisted yet count=%d error=%r", len(masters), exc)
            self._table.mark_unpersisted(masters)
        else:
            self._late.difference_update(m.job_id for m in masters)

    def take_late(self, job_ids: list[str]) -> set[str]:
        """Those of ``job_ids`` whose records are still to be written late (no write of this
        term since recovery), no longer noted; called under the lock."""
        late = self._late.intersection(job_ids)
        self._late.difference_update(job_ids)
        return late

    def defer(self) -> None:
        """From now until :meth:`flush_deferred`, only note which records to write."""
        with self._table.lock:
            self._table.defer_status_writes()

    def flush_deferred(self, later: Mapping[str, int]) -> dict[str, int]:
        """Write the status records noted during recovery but those of ``later`` (job id:
        the version of the record recovery read), which are returned, for
        :mod:`.late_records` to write once the term is ready. FencedError propagates."""
        table, epoch = self._table, self._term.epoch
        with table.lock:
            masters = table.take_deferred()
            left = {
                m.job_id: later[m.job_id]
                for m in masters
                if m.job_id in later and self.notifications.of_restart(m) is None
            }
            masters = [m for m in masters if m.job_id not in left]
            self._late = set(left)
            try:
                self._stores.statuses.write_many(
                    self._term.fence, [m.record(epoch) for m in masters]
                )
            except FencedError:
                raise
            except StewardError as exc:
                log.warning("recovered job statuses not persisted yet error=%r", exc)
                table.mark_unpersisted(masters)
                return left
            for master in masters:  # restarts decided in recovery: their event with a record
                if self.notifications.of_restart(master) is not None:
                    self.persist(master)
        return left

    def retry_unwritten(self) -> None:
        """Write again the results and status records ZooKeeper refused before."""
        for pending in self._table.take_pending_results():
            self.terminate(pending.master, pending.terminal)
        for master in self._table.take_unpersisted():
            self.persist(master)

    def settle(self, master: JobMaster, terminal: Terminal | None) -> bool:
        """Record ``terminal`` if the job ended, else persist its new state."""
        if terminal is not None:
            return self.terminate(master, terminal)
        return self.persist(master)

    def terminate(self, master: JobMaster, terminal: Terminal) -> bool:
        """Record the job's result (DIRTY), then hand it to cleanup. False: retried later."""
        job_id = master.job_id
        try:
            notice = self._create_dirty(master, terminal)
            self._term.metrics.jobs_terminated.labels(state=terminal.state.value).inc()
            self._delivery.add(notice)
        except JobExistsError:
            pass  # recorded before (by us, or by an earlier leader): the first result stands
        except FencedError as exc:
            self._term.fenced(exc)
            return False
        except StewardError as exc:
            log.warning("result not recorded yet job=%s error=%r", job_id, exc)
            self._table.pend_result(master, terminal)
            return False
        self._forget(master)
        log.info(
            "job terminated job=%s state=%s epoch=%d", job_id, terminal.state, self._term.epoch
        )
        return True

    def already_ended(self, master: JobMaster) -> None:
        """The job has a result an earlier leader recorded (:mod:`.result_check`): it leaves
        the table and its cleanup is queued, as recovery settles such a job; nothing is
        written (the first result stands)."""
        self._forget(master)

    def fail_unrecoverable(self, job_id: str, error: ErrorInfo, team: str | None = None) -> None:
        """Record FAILED for a job that has no JobMaster (its recovery failed, rule 6);
        ``team``: its owner, if its status record still says."""
        entry = JobResultEntry(
            job_id=job_id,
            state=TerminalState.FAILED,
            error=error,
            finished_at=self._term.wall(),
            epoch=self._term.epoch,
            team=team,
        )
        notice = self.notifications.of_unrecoverable(job_id, error)
        with contextlib.suppress(JobExistsError):  # recorded before: the first result stands
            self._stores.results.create_dirty(self._term.fence, entry, self._creates(notice))
            self._delivery.add(notice)
        log.error("job failed in recovery job=%s cause=%s", job_id, error.message)
        self._cleanup.put(job_id)

    def _entry(self, master: JobMaster, terminal: Terminal) -> JobResultEntry:
        return JobResultEntry(
            job_id=master.job_id,
            state=terminal.state,
            value=terminal.value,
            error=terminal.error,
            submitted_at=master.submitted_at,
            finished_at=self._term.wall(),
            name=master.facts.name,
            attempts=attempts_to_keep(master.attempts),
            attempt_count=master.attempt_count,
            failures=master.failures,
            labels=master.facts.labels,
            epoch=self._term.epoch,
            submitter=master.facts.submitter,
            team=master.facts.team,
            queue=master.facts.queue,
            priority=master.facts.priority,
            proxy_user=master.facts.proxy_user,
            timeout=master.facts.timeout,
            env=master.shown_env,
            submission_sha256=master.pointer.submission_sha256,
        )

    def recovered(self, master: JobMaster) -> None:
        """``master`` was recovered from its record (see :mod:`.notifications`)."""
        self.notifications.recovered(master)

    def _write(self, master: JobMaster) -> None:
        """Write the job's status record, with the notification of its restart if due."""
        record, fence = master.record(self._term.epoch), self._term.fence
        notice = self.notifications.of_restart(master)
        if notice is None:
            self._stores.statuses.write(fence, record)
            return
        if self._stores.statuses.write_with(fence, record, self._creates(notice)):
            self._delivery.add(notice)  # else written before: delivered from there
        self.notifications.restart_written(master)

    def _create_dirty(self, master: JobMaster, terminal: Terminal) -> NotificationRecord | None:
        """Record the result with its end's notification; the notification written."""
        results, fence = self._stores.results, self._term.fence
        notice = self.notifications.of_end(master, terminal)
        try:
            results.create_dirty(fence, self._entry(master, terminal), self._creates(notice))
        except ResultTooLargeError as exc:
            error = ErrorInfo(type="steward.ResultTooLarge", message=str(exc))
            failed = Terminal(TerminalState.FAILED, None, error)
            notice = self.notifications.of_end(master, failed)
            results.create_dirty(fence, self._entry(master, failed), self._creates(notice))
        return notice

    def _creates(self, notice: NotificationRecord | None) -> list[Create]:
        return [] if notice is None else [self._stores.outbox.create_of(notice)]

    def _forget(self, master: JobMaster) -> None:
        """The result is recorded: the job leaves the table, its slot is free, cleanup next."""
        job_id = master.job_id
        self._table.forget(master)
        self._hooks.cancel(job_id)
        self.notifications.forget(job_id)
        self._cleanup.put(job_id)
