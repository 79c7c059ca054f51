"""Recovery of one job on grant (rules 6-8): its master made from its graph and status
record, then its attempt adopted (a lease names it), awaited (its TaskManager may still report
it), counted lost, or its initialize hook run again. A job that cannot be recovered becomes
FAILED with its cause, alone (rule 6); a store that does not answer raises, concluding nothing.
The listing, the batched reads and the retries are :mod:`.recovery`'s.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from functools import partial

from steward.artifacts.pipeline import may_define_initialize
from steward.errors import (
    CorruptStateError,
    FencedError,
    JobNotFoundError,
    StewardError,
    UnsupportedSchemaError,
    is_unavailable,
)
from steward.wire.jobs import JobGraph, JobGraphPointer, JobSpec
from steward.wire.records import AttemptRecord, ErrorInfo, ExecutionLease, JobStatusRecord
from steward.wire.states import JobState

from .commands import send_cancel
from .context import TermContext
from .initialization import Initialization
from .job_facts import JobFacts, LazySpec
from .jobmaster import JobMaster
from .outcomes import AttemptOutcomes
from .records import Records

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prefetched:
    """A chunk's pointers and status records, read before its jobs are recovered. A job
    absent from ``pointers`` had no graph when they were read."""

    pointers: dict[str, JobGraphPointer | CorruptStateError]
    records: dict[str, JobStatusRecord | None]
    versions: dict[str, int] = field(default_factory=dict)
    """The znode version of each record read: a job recovered from its record has it
    rewritten once the term is ready, only if it is still that version (:mod:`.late_records`)."""
    warm: int = 0
    """How many of them the standby held (:mod:`steward.store.warm_records`), not read."""


class JobRecovery:
    """Recovers jobs into the table, for one term: adopted from their records in bulk, or
    one at a time."""

    def __init__(
        self, ctx: TermContext, *, records: Records, initialization: Initialization
    ) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._records = records
        self._initialization = initialization
        self._outcomes = AttemptOutcomes(ctx, records)

    def recover_from_records(
        self, chunk: list[str], leases: dict[str, ExecutionLease], found: Prefetched
    ) -> tuple[list[str], int]:
        """Recover every job of ``chunk`` whose pointer and status record hold all it needs,
        without reading its graph (the spec is read when the job next needs it:
        :meth:`JobMaster.read_graph`): adopted if a lease names its attempt, scheduled if it
        was only waiting for a slot and cannot run a hook. The jobs left, to recover one by
        one, and how many were adopted. One hold of the table's lock for the chunk: no pool,
        no blob, no log line per job."""
        rest: list[str] = []
        adopted = 0
        with self._table.lock:
            for job_id in chunk:
                lease = leases.get(job_id)
                master = self._from_record(job_id, found, leased=lease is not None)
                if master is None:
                    rest.append(job_id)
                    continue
                hookless = master.hookless is True
                self._table.admit(master, hookless=hookless, adopting=lease is not None)
                self._records.recovered(master)
                if lease is not None:
                    adopted += 1
                    self._adopt(master, lease)
                else:
                    self._initialization.start(master)
        return rest, adopted

    def _from_record(self, job_id: str, found: Prefetched, *, leased: bool) -> JobMaster | None:
        """The job's master from its pointer and record alone; None if they do not suffice
        (no usable pointer or record, a record from before the facts were kept, a restart
        delay running, whose length is the spec's, or, with no lease, anything but a job
        waiting for a slot whose pipeline cannot define ``initialize``)."""
        pointer, record = found.pointers.get(job_id), found.records.get(job_id)
        if not isinstance(pointer, JobGraphPointer) or record is None:
            return None
        facts = JobFacts.of_record(record)
        if facts is None or record.state is JobState.RESTARTING:
            return None
        if not leased and not _schedulable(record):
            return None
        read = partial(self._spec_at, job_id, pointer)
        lazy = LazySpec(facts, record.env, read)
        return JobMaster(lazy, pointer, record.submitted_at, record=record)

    def _spec_at(self, job_id: str, pointer: JobGraphPointer) -> JobSpec:
        return self._stores.graphs.graph_at(job_id, pointer).spec

    def recover_one(
        self, job_id: str, leases: dict[str, ExecutionLease], found: Prefetched | None = None
    ) -> str:
        """Recover one job; never raises for a problem of this job alone (rule 6). ``found``:
        its pointer and record read already (else they are read now).

        Raises FencedError, and the StewardError of a store that did not answer
        (:func:`~steward.errors.is_unavailable`) or of a record written by a newer Steward
        (UnsupportedSchemaError: this release cannot judge the job, so it refuses, loudly,
        and never fails it): then nothing about the job was concluded or kept, and it is to
        be recovered again.
        """
        try:
            return self._recover_job(job_id, leases, found)
        except FencedError:
            raise
        except StewardError as exc:
            if _not_a_verdict(exc):
                self._unload(job_id)
                raise
            cause: Exception = exc
        except Exception as exc:
            cause = exc
        log.error("recovery of one job failed job=%s", job_id, exc_info=cause)
        self._unload(job_id)
        return self._fail(job_id, f"job {job_id!r} could not be recovered: {cause!r}")

    def _fail(self, job_id: str, message: str) -> str:
        """Record the verdict: the job is FAILED (rule 6). A store that does not answer
        raises, as a read would: nothing is concluded until the verdict is recorded."""
        error = ErrorInfo(type="steward.RecoveryError", message=message)
        try:
            self._records.fail_unrecoverable(job_id, error, self._team_of(job_id))
        except FencedError:
            raise
        except (StewardError, ValueError) as exc:
            if is_unavailable(exc):
                raise
            log.error("recovery verdict not recorded job=%s error=%r", job_id, exc)
        return "failed"

    def _team_of(self, job_id: str) -> str | None:
        """The team its status record names: its result stays that team's (teams' reads)."""
        with contextlib.suppress(StewardError):
            record = self._stores.statuses.find_quietly(job_id)
            return None if record is None else record.team
        return None

    def _unload(self, job_id: str) -> None:
        """Forget a half-recovered job (its master was put in the table before a read failed)."""
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if master is not None:
                self._table.forget(master)

    def _recover_job(
        self, job_id: str, leases: dict[str, ExecutionLease], found: Prefetched | None
    ) -> str:
        loaded = self._load(job_id, found)
        if isinstance(loaded, str):
            return loaded
        master, hookless = loaded
        lease = leases.get(job_id)
        with self._table.lock:
            self._table.admit(master, hookless=hookless, adopting=lease is not None)
            self._records.recovered(master)
            if lease is not None:
                return self._adopt(master, lease)
            return self._resume(master)

    def _load(self, job_id: str, found: Prefetched | None) -> tuple[JobMaster, bool] | str:
        """The job's master (from its graph and record) and whether it is hookless; else the
        recovery's outcome."""
        try:
            pointer, graph = self._graph(job_id, found)
        except JobNotFoundError:
            return "gone"  # removed meanwhile (cannot happen under our fence, but harmless)
        except FencedError:
            raise
        except StewardError as exc:
            if _not_a_verdict(exc):
                raise  # a blip or a newer record, not a verdict: the job is recovered again
            return self._fail(job_id, f"job graph of {job_id!r} could not be recovered: {exc}")
        if found is None:
            record = self._stores.statuses.find_quietly(job_id)
        else:
            record = found.records.get(job_id)
        master = JobMaster(graph.spec, pointer, graph.submitted_at, record=record)
        master.is_recovery = record is not None
        master.hookless = not may_define_initialize(graph.artifact)
        return master, master.hookless

    def _graph(self, job_id: str, found: Prefetched | None) -> tuple[JobGraphPointer, JobGraph]:
        if found is None:
            return self._stores.graphs.get_with_pointer(job_id)
        pointer = found.pointers.get(job_id)
        if pointer is None:
            raise JobNotFoundError(job_id, "job graph")
        if isinstance(pointer, CorruptStateError):
            raise type(pointer)(str(pointer)) from pointer  # UnsupportedSchemaError stays one
        return pointer, self._stores.graphs.graph_at(job_id, pointer)

    def _adopt(self, master: JobMaster, lease: ExecutionLease) -> str:
        """The attempt holds its lease: it keeps running under this term (rule 8)."""
        epoch = self._term.epoch
        self._table.adopt(master, lease, epoch)
        if master.cancel_requested:
            send_cancel(self._term, self._table.rm, master)
        self._records.persist(master)
        log.debug(  # the summary counts them: a line each was 10,000 at a takeover
            "attempt adopted job=%s attempt=%d tm=%s lease_epoch=%d epoch=%d",
            master.job_id,
            lease.attempt,
            lease.taskmanager,
            lease.epoch,
            epoch,
        )
        return "adopted"

    def _resume(self, master: JobMaster) -> str:
        """No lease: wait for the last attempt's report, or count it lost; then go on."""
        last = master.attempts[-1] if master.attempts else None
        if last is not None and not last.state.is_final:
            if self._table.rm.is_registered(last.taskmanager):
                return self._await_report(master, last)
            cause = ErrorInfo(
                type="steward.TaskManagerLost",
                message=f"TaskManager {last.taskmanager} left while the leader changed",
            )
            now, grace = self._term.monotonic(), self._term.replacement_grace
            terminal = self._outcomes.lose(master, last.number, cause, now=now, grace=grace)
            if terminal is not None:
                self._records.terminate(master, terminal)
                return "failed"
        if master.cancel_requested:
            self._records.settle(master, master.cancel())
            return "failed"
        self._initialization.start(master)
        return "restarted"

    def _await_report(self, master: JobMaster, last: AttemptRecord) -> str:
        # Its lease is gone but its TaskManager lives: it may hold the outcome.
        until = (
            self._term.monotonic() + 3 * self._term.settings.taskmanager.heartbeat_interval + 5.0
        )
        self._table.await_report(master, last, until)
        return "awaiting"


WAITING = frozenset({JobState.SUBMITTED, JobState.INITIALIZING, JobState.SCHEDULED})
"""States of a job with no lease that a new leader schedules from its record alone."""


def _schedulable(record: JobStatusRecord) -> bool:
    """Whether a job without a lease needs nothing of its spec to be scheduled again: its
    pipeline cannot define ``initialize`` (so no hook round), it was only waiting (no restart
    delay, no cancel to finish), no attempt of it is in flight (none to await or count lost),
    and the record holds every fact the scheduler reads (``max_concurrent`` is kept with
    ``hookless``)."""
    last = record.attempts[-1] if record.attempts else None
    return (
        record.hookless is True
        and record.state in WAITING
        and (last is None or last.state.is_final)
    )


def _not_a_verdict(exc: StewardError) -> bool:
    """A store that did not answer, or a record of a newer schema (a rolling upgrade turned
    ``high-availability.record-format`` up too early): the job is tried again, never failed."""
    return is_unavailable(exc) or isinstance(exc, UnsupportedSchemaError)
