"""What the leader writes about a job: its status record, and its result when it ends.

Every transition of a job is persisted to ``jobs/<job-id>/status`` through the fence (rule 2),
so standbys can answer reads and the next leader continues where this one stopped. A
globally terminal job gets its result entry created DIRTY first and is only then handed to
cleanup (rule 7); the first result recorded for a job stands. What ZooKeeper refuses is kept
(``unpersisted``, ``pending_results``) and written again on the next scheduling pass. Called
under the job table's lock.
"""

from __future__ import annotations

import contextlib
import logging

from steward.errors import FencedError, JobExistsError, StewardError
from steward.store.results import ResultTooLargeError
from steward.wire.records import ErrorInfo, JobResultEntry, attempts_to_keep
from steward.wire.states import TerminalState

from ..hooks import HookRunner
from .cleanup import Cleanup
from .jobmaster import JobMaster
from .jobmaster_values import Terminal
from .stores import LeaderStores
from .table import JobTable, PendingResult
from .term import Term

log = logging.getLogger(__name__)


class Records:
    def __init__(
        self,
        term: Term,
        table: JobTable,
        stores: LeaderStores,
        cleanup: Cleanup,
        hooks: HookRunner,
    ) -> None:
        self._term = term
        self._table = table
        self._stores = stores
        self._cleanup = cleanup
        self._hooks = hooks

    def persist(self, master: JobMaster) -> bool:
        """Write the job's status record; False (retried later) if ZooKeeper is unreachable.

        During recovery the write is only noted: :meth:`flush_deferred` writes every noted
        record in a few batched transactions before the leader is ready (one write per job,
        made under the lock, used to bound recovery and so failover).
        """
        table = self._table
        if table.deferred is not None:
            table.deferred.add(master.job_id)
            return True
        try:
            self._stores.statuses.write(self._term.fence, master.record(self._term.epoch))
        except FencedError as exc:
            self._term.fenced(exc)
            return False
        except StewardError as exc:
            log.warning("job status not persisted yet job=%s error=%r", master.job_id, exc)
            table.unpersisted.add(master.job_id)
            return False
        return True

    def persist_many(self, masters: list[JobMaster]) -> None:
        """Write these jobs' status records in batched transactions (see :meth:`persist`)."""
        table = self._table
        if table.deferred is not None:
            table.deferred.update(m.job_id for m in masters)
            return
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
            table.unpersisted.update(m.job_id for m in masters)

    def defer(self) -> None:
        """From now until :meth:`flush_deferred`, only note which records to write."""
        with self._table.lock:
            self._table.deferred = set()

    def flush_deferred(self) -> None:
        """Write the status records noted during recovery; FencedError propagates."""
        table, epoch = self._table, self._term.epoch
        with table.lock:
            deferred, table.deferred = table.deferred or set(), None
            masters = [table.jobs[job_id] for job_id in sorted(deferred) if job_id in table.jobs]
            try:
                self._stores.statuses.write_many(
                    self._term.fence, [m.record(epoch) for m in masters]
                )
            except FencedError:
                raise
            except StewardError as exc:
                log.warning("recovered job statuses not persisted yet error=%r", exc)
                table.unpersisted.update(m.job_id for m in masters)

    def retry_unwritten(self) -> None:
        """Write again the results and status records ZooKeeper refused before."""
        table = self._table
        for job_id, pending in list(table.pending_results.items()):
            del table.pending_results[job_id]
            self.terminate(pending.master, pending.terminal)
        for job_id in list(table.unpersisted):
            master = table.jobs.get(job_id)
            table.unpersisted.discard(job_id)
            if master is not None:
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
            self._create_dirty(self._entry(master, terminal))
            self._term.metrics.jobs_terminated.labels(state=terminal.state.value).inc()
        except JobExistsError:
            pass  # recorded before (by us, or by an earlier leader): the first result stands
        except FencedError as exc:
            self._term.fenced(exc)
            return False
        except StewardError as exc:
            log.warning("result not recorded yet job=%s error=%r", job_id, exc)
            self._table.pending_results[job_id] = PendingResult(master, terminal)
            return False
        self._forget(master)
        log.info(
            "job terminated job=%s state=%s epoch=%d", job_id, terminal.state, self._term.epoch
        )
        return True

    def fail_unrecoverable(self, job_id: str, error: ErrorInfo) -> None:
        """Record FAILED for a job that has no JobMaster (its recovery failed, rule 6)."""
        entry = JobResultEntry(
            job_id=job_id,
            state=TerminalState.FAILED,
            error=error,
            finished_at=self._term.wall(),
            epoch=self._term.epoch,
        )
        with contextlib.suppress(JobExistsError):  # recorded before: the first result stands
            self._stores.results.create_dirty(self._term.fence, entry)
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
            name=master.spec.name,
            attempts=attempts_to_keep(master.attempts),
            attempt_count=master.attempt_count,
            failures=master.failures,
            labels=master.spec.labels,
            epoch=self._term.epoch,
            submitter=master.spec.submitter,
            timeout=master.spec.timeout,
            env=master.shown_env,
        )

    def _create_dirty(self, entry: JobResultEntry) -> None:
        try:
            self._stores.results.create_dirty(self._term.fence, entry)
        except ResultTooLargeError as exc:
            error = ErrorInfo(type="steward.ResultTooLarge", message=str(exc))
            entry = entry.model_copy(
                update={"state": TerminalState.FAILED, "value": None, "error": error}
            )
            self._stores.results.create_dirty(self._term.fence, entry)

    def _forget(self, master: JobMaster) -> None:
        """The result is recorded: the job leaves the table, its slot is free, cleanup next."""
        job_id = master.job_id
        self._table.jobs.pop(job_id, None)
        self._table.hookless.discard(job_id)
        self._table.deadlines.discard(job_id)
        self._hooks.cancel(job_id)
        if master.current is not None:
            self._table.rm.release(master.current.taskmanager, job_id, master.current.number)
        self._cleanup.put(job_id)
