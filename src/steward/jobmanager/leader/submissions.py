"""Submissions and cancels: the leader's two writes on behalf of clients.

A submission stores the job's graph through the fence (outside the lock: the blob can be
large); the pointer's create fails for a second submission of the same id, so no two can both
succeed, and an id that already has a result is refused with that result (rule 7): the same
transaction checks that ``results/<id>`` does not exist, so a submission is one round trip. A
cancel is answered only once ZooKeeper holds it (the status record or the result), so the next
leader cannot lose it. Both answer NotReadyError while the term recovers or after it ended.
"""

from __future__ import annotations

import logging

from steward.artifacts.pipeline import may_define_initialize
from steward.errors import (
    CorruptStateError,
    FencedError,
    JobExistsError,
    JobNotFoundError,
    NodeExistsError,
    NotReadyError,
    StewardError,
    ZooKeeperUnavailableError,
)
from steward.jobmanager.errors import JobResultExistsError
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.records import ExecutionLease
from steward.wire.rest import JobView

from .commands import send_cancel
from .context import TermContext
from .initialization import Initialization
from .jobmaster import JobMaster
from .notifications import check_targets
from .queues import check_queue
from .records import Records
from .recovery import Recovery
from .views import live_view

log = logging.getLogger(__name__)


class Submissions:
    def __init__(
        self,
        ctx: TermContext,
        *,
        records: Records,
        initialization: Initialization,
        recovery: Recovery,
    ) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._hooks = ctx.hooks
        self._records = records
        self._initialization = initialization
        self._recovery = recovery

    def submit(self, spec: JobSpec, graph: JobGraph) -> JobView:
        """Persist a new job's graph and first status record, then schedule it.

        Raises JobRejectedError (a webhook of its own not allowed, an unknown queue),
        JobResultExistsError
        (the id has a result), JobExistsError (it is live, or another submission is being
        stored) or NotReadyError (this very submission, retried, is still being stored: its
        outcome is not known yet). No ZooKeeper request is made
        under the table's lock: concurrent submissions share their creates' transaction
        (:mod:`steward.store.group_commit`).
        """
        self._term.check_ready()
        check_targets(spec, self._term.settings.notifications)
        check_queue(spec, self._term.settings.scheduling)
        job_id, table = spec.job_id, self._table
        hookless = not may_define_initialize(graph.artifact)
        with table.lock:
            table.reserve(job_id, graph.submission_sha256)
        try:
            master, recorded = self._store(spec, graph, hookless)
        except FencedError as exc:
            self._term.fenced(exc)
            raise
        except JobExistsError:
            self._take_up_orphan(job_id)
            raise
        finally:
            with table.lock:
                table.unreserve(job_id)
        with table.lock:
            table.admit(master, hookless=hookless)
            if not recorded:
                self._records.persist(master)
            self._initialization.begin_new(master, hookless=hookless)
            log.info(
                "job submitted job=%s name=%r epoch=%d blob=%s",
                job_id,
                spec.name,
                self._term.epoch,
                master.pointer.blob,
            )
            return live_view(self._term, master)

    def _store(self, spec: JobSpec, graph: JobGraph, hookless: bool) -> tuple[JobMaster, bool]:
        """The new job's master, its graph stored; True if its first status record was
        stored with the graph's pointer (False: it is still to be written)."""
        graphs, fence = self._stores.graphs, self._term.fence
        pointer = graphs.write_blob(fence, graph)
        master = JobMaster(spec, pointer, graph.submitted_at)
        self._initialization.prepare_new(master, hookless=hookless)
        record = master.record(self._term.epoch)
        first = self._stores.statuses.first_creates(record)
        result = self._stores.results.path(spec.job_id)
        try:
            # Rule 7 in the same transaction: no result of this id, or nothing is created.
            graphs.add(fence, spec.job_id, pointer, first, unless=[result])
            self._stores.statuses.created(record)
            return master, True
        except NodeExistsError as exc:
            if exc.path == result:
                self._refuse_result(spec.job_id, graph.submission_sha256)
                message = f"the result of job {spec.job_id!r} was just removed; retry"
                raise NotReadyError(message) from exc
            # Nodes of an earlier job of this id outlived it (a cleanup cut short): the
            # pointer alone, then the record written as every later one is.
            log.warning("job nodes exist already job=%s node=%s", spec.job_id, exc.path)
        self._refuse_result(spec.job_id, graph.submission_sha256)
        master.pointer = graphs.put(fence, graph)
        return master, False

    def _take_up_orphan(self, job_id: str) -> None:
        """A pointer exists that this term has no JobMaster for: take the job up.

        It is our own earlier create whose answer was lost (ZooKeeper unreachable: the client
        got 503 and retried); without this the job would wait for the next failover's
        recovery. Called while ``job_id`` is in ``submitting``, so nothing races it.
        """
        with self._table.lock:
            if job_id in self._table.jobs or job_id in self._table.pending_results:
                return
        log.warning("job graph found without a job master; recovering it job=%s", job_id)
        try:
            self._recovery.recover_one(job_id, self._lease_of(job_id))
        except FencedError as exc:
            self._term.fenced(exc)
        except StewardError as exc:  # the next failover recovers it
            log.warning("could not take up job=%s error=%r", job_id, exc)

    def _lease_of(self, job_id: str) -> dict[str, ExecutionLease]:
        """The job's lease alone, as recovery takes leases (one read, not every lease of the
        cluster; a corrupt one is left out, as a recovery's listing leaves it out)."""
        try:
            lease = self._stores.leases.held(job_id)
        except CorruptStateError as exc:
            log.warning("lease unreadable job=%s error=%s", job_id, exc)
            return {}
        return {} if lease is None else {job_id: lease}

    def _refuse_result(self, job_id: str, digest: str | None) -> None:
        """Refuse an id that has a result (rule 7), with that result. The usual submission
        checks this in its own transaction (:meth:`_store`); this read is for the rest. Read
        outside the lock, once the id is marked submitting: a job leaves the table only after
        its result is written, so a job of this id that ended before the mark has a result
        this (later) read sees.

        Another body than the one that submitted the ended job is refused as for a live job
        (JobExistsError with the stored digest): a task re-run with a changed spec must not
        take the old job's result as its own. The same body, or a result that kept no
        digest, is answered with the result."""
        existing = self._stores.results.find(job_id)
        if existing is None:
            return
        stored = existing.submission_sha256
        if stored is not None and digest is not None and stored != digest:
            what = f"{existing.state.value} job submitted with another body"
            raise JobExistsError(job_id, what, submission_sha256=stored)
        raise JobResultExistsError(existing)

    def cancel(self, job_id: str) -> JobView:
        self._term.check_ready()
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if master is None:
                return self._cancel_ended(job_id)
            if not master.cancel_requested:
                self.cancel_live(master)
                log.info("job cancel requested job=%s state=%s", job_id, master.state)
            self._require_stored(master)
            return live_view(self._term, master)

    def _cancel_ended(self, job_id: str) -> JobView:
        """Cancel of a job with no live master: its result is being written, or exists."""
        pending = self._table.pending_results.get(job_id)
        if pending is not None:
            self._require_stored(pending.master)
            return live_view(self._term, pending.master)
        result = self._stores.results.find(job_id)
        if result is not None:
            raise JobResultExistsError(result)
        raise JobNotFoundError(job_id, "job")

    def cancel_live(self, master: JobMaster) -> None:
        """Cancel a live job (a request, or its timeout: ``master.timed_out``), its new
        state persisted or its result recorded; called under the lock."""
        terminal = master.cancel()
        self._hooks.cancel(master.job_id)
        if terminal is not None:
            self._records.terminate(master, terminal)
        elif master.current is not None:
            # Never collected by its TaskManager: nothing runs, the job ends now.
            withdrawn = self._table.withdraw(master)
            if withdrawn is not None:
                self._records.terminate(master, withdrawn)
            else:
                send_cancel(self._term, self._table.rm, master)
                self._records.persist(master)

    def _require_stored(self, master: JobMaster) -> None:
        """Answer a cancel only once ZooKeeper holds it, so no next leader can lose it.

        Raises ZooKeeperUnavailableError (503: the client retries) while the job's status
        record or result could not be written; the retry writes it again.
        """
        job_id, table = master.job_id, self._table
        if self._term.stopped.is_set():  # fenced while writing it: the next leader decides
            raise NotReadyError("this JobManager is no longer the leader")
        if table.unmark_unpersisted(job_id):
            self._records.persist(master)  # marks it again if ZooKeeper is still unreachable
        if job_id in table.unpersisted or job_id in table.pending_results:
            raise ZooKeeperUnavailableError(
                f"the cancel of job {job_id!r} is not stored yet: ZooKeeper is unreachable; retry"
            )
