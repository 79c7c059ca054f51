"""Recovery on grant (rules 6-8): the step that fills the job table before scheduling.

In order: the execution leases are read once; every DIRTY result, and every job graph whose job
already has a result, is queued for cleanup (results are looked up only for the jobs without a
lease: one with a lease is adopted, and :mod:`.result_check` reads its result before any new
attempt of it); every other job graph is recovered on its own, on
``jobmanager.recovery-parallelism`` threads. ZooKeeper is read in pipelined batches (the
members, the leases, then per :data:`CHUNK` jobs their pointers and status records, one round
trip each), so only the graphs' blobs are read job by job, and not even those for a job whose
lease and record say all its adoption needs: it is adopted from them, its graph read when it
next needs it (:meth:`JobRecovery.recover_from_records`, issue 22), and its record rewritten
after the term is ready (:mod:`.late_records`). A job that cannot be recovered
(graph missing or corrupt, anything else raised) becomes FAILED with its cause; no other job
is affected and the leader keeps going (rule 6). A job whose lease exists is adopted: its
attempt keeps running (rule 8). A job whose record shows an attempt in flight without a lease
waits a few heartbeats for its TaskManager's report if that TaskManager is a member, else the
attempt is LOST. Every other job runs its initialize hook again. Status records are written in
batches at the end, before the term is ready (but those of jobs recovered from their records:
after it). Only a FencedError (or a failure of the whole step) ends the term.

A store that does not answer (:func:`~steward.errors.is_unavailable`) is no verdict: the
listing, or that job's recovery, is tried again with back-off, its lease read afresh, until it
succeeds or the term ends. The term is not ready until every job is known, so meanwhile no
heartbeat is taken and no attempt is cancelled as a stray (issue 23).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from steward.errors import CorruptStateError, FencedError, StewardError, is_unavailable
from steward.store.warm_records import WarmRecords
from steward.store.warm_snapshot import WarmSnapshot
from steward.wire.records import ExecutionLease

from .cleanup import Cleanup
from .collections_paused import collections_paused, kept_until_recovered
from .context import TermContext
from .initialization import Initialization
from .late_records import LateRecords
from .membership import Membership
from .records import Records
from .recovery_job import JobRecovery, Prefetched

log = logging.getLogger(__name__)

RETRY_FIRST = 0.2
"""Seconds before the first retry of a job whose stores did not answer; doubled each time."""
RETRY_MOST = 5.0
"""The longest pause between two tries: a storage stall that ends is noticed within this."""
CHUNK = 1000
"""Jobs whose pointers and status records are read together, pipelined: one round trip each
instead of two per job, and the answers held at once bounded."""
WARM_WAIT = 2.0
"""Seconds a new leader waits for its standby's copy of the records to catch up with the
grant (:meth:`WarmRecords.take`); after that it reads every job, as without one."""


@dataclass(frozen=True)
class Listing:
    """What recovery reads before any job: the cleanups to queue, the leases, the jobs."""

    cleanups: list[str]
    dirty: int
    leases: dict[str, ExecutionLease]
    todo: list[str]
    cleared: frozenset[str]
    """The jobs whose result was looked up, and none found (:mod:`.result_check`)."""


class Recovery:
    def __init__(
        self,
        ctx: TermContext,
        *,
        records: Records,
        cleanup: Cleanup,
        initialization: Initialization,
        membership: Membership,
        late: LateRecords,
        warm: WarmRecords | None = None,
    ) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._warm = warm
        self._held: WarmSnapshot | None = None
        """What the standby held of the jobs at the grant, vouched for (None: read all)."""
        self._warm_taken = False
        self._records = records
        self._late = late
        self._later: dict[str, int] = {}
        self._cleanup = cleanup
        self._membership = membership
        self._job = JobRecovery(ctx, records=records, initialization=initialization)

    def recover(self) -> dict[str, int]:
        """Recover every job of the cluster into the table; the summary, by outcome."""
        started, cpu_started = self._term.monotonic(), time.thread_time()
        parallelism = self._term.settings.jobmanager.recovery_parallelism
        with (
            kept_until_recovered(),
            ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="recover") as pool,
        ):
            listing = self._list_until_known(pool)
            if listing is None:  # the term ended while ZooKeeper did not answer
                return {"jobs": 0}
            return self._recover_listed(listing, pool, (started, cpu_started))

    def _recover_listed(
        self, listing: Listing, pool: ThreadPoolExecutor, started: tuple[float, float]
    ) -> dict[str, int]:
        """``started``: the recovery's monotonic time and this thread's CPU time at its start."""
        for job_id in listing.cleanups:
            self._cleanup.put(job_id)
        # What the listings cost against the jobs' own reads: the split a profile starts from.
        log.info(
            "recovery listed epoch=%d seconds=%.3f leases=%d jobs=%d",
            self._term.epoch,
            self._term.monotonic() - started[0],
            len(listing.leases),
            len(listing.todo),
        )
        outcomes = self._recover_all(listing.todo, listing.leases, pool)
        with self._table.lock:  # before the first scheduling pass: none runs yet
            for job_id in listing.cleared:
                self._table.clear_of_results(job_id)
        self._term.metrics.recovered(outcomes.count("adopted"), outcomes.count("restarted"))
        summary = {
            "jobs": len(listing.todo),
            "adopted": outcomes.count("adopted"),
            "awaiting": outcomes.count("awaiting"),
            "restarted": outcomes.count("restarted"),
            "failed": outcomes.count("failed"),
            "dirty_cleanups": listing.dirty,
        }
        # thread_cpu_s: this thread's CPU (not the pool's, not heartbeats'), what a takeover's
        # profile starts from on a machine whose load stretches every wall time.
        log.info(
            "recovery done epoch=%d seconds=%.3f %s thread_cpu_s=%.3f",
            self._term.epoch,
            self._term.monotonic() - started[0],
            " ".join(f"{k}={v}" for k, v in summary.items()),
            time.thread_time() - started[1],
        )
        return summary

    def _warm_leases(self) -> dict[str, ExecutionLease] | None:
        """The warm standby's leases, on the listing's first try only (a later try reads the
        members again, after its barrier); what it holds of the jobs is kept either way."""
        if self._warm_taken:
            return None
        self._warm_taken = True
        self._held = self._take_warm()
        return None if self._held is None else self._held.leases

    def _take_warm(self) -> WarmSnapshot | None:
        """The standby's records, if it can vouch that they are as new as the grant; it
        stops following them either way (docs/architecture.md, "A warm standby")."""
        if self._warm is None:
            return None
        started = self._term.monotonic()
        held = self._warm.take(WARM_WAIT)
        log.info(
            "recovery warm epoch=%d seconds=%.3f held=%d",
            self._term.epoch,
            self._term.monotonic() - started,
            -1 if held is None else len(held),
        )
        return held

    def _list_until_known(self, pool: ThreadPoolExecutor) -> Listing | None:
        """:meth:`_list`, tried again with back-off while ZooKeeper does not answer; None if
        the term ended first. A blip here used to end the term: a new epoch and a whole new
        recovery each time, and the longer the listing (10,000 jobs) the likelier a blip."""
        delay = RETRY_FIRST
        while True:
            try:
                with collections_paused():  # one try's reads, each with its deadline
                    return self._list(pool)
            except StewardError as exc:
                if not is_unavailable(exc):
                    raise
                log.warning(
                    "recovery listing waits epoch=%d retry_in=%.1f error=%r",
                    self._term.epoch,
                    delay,
                    exc,
                )
            if self._term.stopped.wait(delay):
                return None
            delay = min(2 * delay, RETRY_MOST)

    def _list(self, pool: ThreadPoolExecutor) -> Listing:
        """The members, the leases and the jobs to recover; nothing is changed until it
        returns (so it can be tried again).

        The members are read first: a lease listed after them belongs to a TaskManager they
        hold (its session ended with its registration, and no newer leader asked for a lease
        yet). The DIRTY results, the leases and the job graphs are listed at once, on
        ``pool``: a handful of jobs then costs a few round trips here, not twice as many,
        each of which a new leader's busy interpreter can stretch
        (``benchmarks/failover_floor.py``). Then the results of the jobs without a lease are
        looked up; a job with a lease is adopted without (its attempt may have reported an
        outcome already: before any new attempt of it, :mod:`.result_check` reads its result).
        A warm standby's leases (first try only) are as they were at its barrier, which comes
        after the members were read, as a read of the leases would."""
        self._membership.refresh()
        # Never a read per result kept (there may be millions): the DIRTY ones are marked,
        # and only the jobs with a graph and no lease are looked up.
        dirty = pool.submit(self._stores.results.dirty_ids)
        listing = pool.submit(self._stores.graphs.job_ids)
        leases = self._warm_leases()
        if leases is None:
            leases = self._stores.leases.all()
        graph_ids = listing.result()
        unleased = [job_id for job_id in graph_ids if job_id not in leases]
        result_ids = self._stores.results.with_result(unleased)
        dirty_ids = dirty.result()
        # A graph whose job has a result: only the cleanup was left to do.
        done = [job_id for job_id in unleased if job_id in result_ids]
        return Listing(
            cleanups=[*dirty_ids, *done],
            dirty=len(dirty_ids),
            leases=leases,
            todo=[job_id for job_id in graph_ids if job_id not in result_ids],
            cleared=frozenset(unleased).difference(result_ids),
        )

    def _recover_all(
        self, todo: list[str], leases: dict[str, ExecutionLease], pool: ThreadPoolExecutor
    ) -> list[str]:
        self._records.defer()
        outcomes: list[str] = []
        for start in range(0, len(todo), CHUNK):
            outcomes.extend(self._recover_chunk(todo[start : start + CHUNK], leases, pool))
        started = self._term.monotonic()
        with collections_paused():  # one batched write, with its deadline
            later = self._records.flush_deferred(self._later)
            self._late.note(later)
        log.info(
            "recovery wrote records epoch=%d seconds=%.3f later=%d",
            self._term.epoch,
            self._term.monotonic() - started,
            len(later),
        )
        return outcomes

    def _recover_chunk(
        self, chunk: list[str], leases: dict[str, ExecutionLease], pool: ThreadPoolExecutor
    ) -> list[str]:
        """Read the chunk's pointers and records, adopt what they allow, recover the rest."""
        began = self._term.monotonic()
        with collections_paused():  # thousands of records made and kept: no scan of each
            found = self._prefetch(chunk, pool)
            read = self._term.monotonic()
            rest, adopted = chunk, 0
            if found is not None:
                rest, adopted = self._job.recover_from_records(chunk, leases, found)
                self._note_late(chunk, rest, found)
        scheduled = len(chunk) - len(rest) - adopted
        log.info(  # a line a chunk: where a takeover's time goes, without a profiler
            "recovery chunk epoch=%d jobs=%d warm=%d read_s=%.3f adopted=%d scheduled=%d"
            " adopt_s=%.3f",
            self._term.epoch,
            len(chunk),
            0 if found is None else found.warm,
            read - began,
            adopted,
            scheduled,
            self._term.monotonic() - read,
        )
        recovered = pool.map(partial(self._recover_until_known, leases=leases, found=found), rest)
        return ["adopted"] * adopted + ["restarted"] * scheduled + list(recovered)

    def _note_late(self, chunk: list[str], rest: list[str], found: Prefetched) -> None:
        """The jobs recovered from their records: their records are rewritten after "ready"
        (they change nothing a next leader needs: ``adopted_by``, the epoch, a state it
        would give them again), only if still the version read here."""
        left = set(rest)
        for job_id in chunk:
            if job_id not in left and job_id in found.versions:
                self._later[job_id] = found.versions[job_id]

    def _prefetch(self, chunk: list[str], pool: ThreadPoolExecutor) -> Prefetched | None:
        """The chunk's pointers and records: those the standby held (:attr:`_held`), and the
        rest read at once; None if ZooKeeper did not answer (then each job reads its own,
        with the retries of :meth:`_recover_until_known`)."""
        held = self._held
        if held is None:
            return self._read(chunk, pool)
        cold = [job_id for job_id in chunk if not held.vouches(job_id)]
        found = self._read(cold, pool) if cold else Prefetched({}, {})
        if found is None:
            return None
        warm = [job_id for job_id in chunk if held.vouches(job_id)]
        for job_id in warm:
            found.pointers[job_id] = held.pointers[job_id]
            found.records[job_id] = held.records[job_id]
            found.versions[job_id] = held.versions[job_id]
        # As if read here: the event stream publishes what its watches had not delivered.
        self._stores.statuses.feed.read([held.records[job_id] for job_id in warm])
        return Prefetched(found.pointers, found.records, found.versions, warm=len(warm))

    def _read(self, chunk: list[str], pool: ThreadPoolExecutor) -> Prefetched | None:
        """The chunk's pointers and records, read at once; None if ZooKeeper did not answer."""
        reading = pool.submit(self._stores.graphs.pointers_quietly, chunk)
        try:
            records, versions = self._stores.statuses.find_many_versioned(chunk)
            pointers = reading.result()
        except StewardError as exc:  # reads are not fenced: only "unavailable" comes here
            log.warning(
                "recovery reads job by job jobs=%d epoch=%d error=%r",
                len(chunk),
                self._term.epoch,
                exc,
            )
            return None
        return Prefetched(pointers, records, versions)

    def _recover_until_known(
        self, job_id: str, leases: dict[str, ExecutionLease], found: Prefetched | None
    ) -> str:
        """Recover one job, trying again while its stores do not answer (until the term ends:
        then "abandoned", and the next leader recovers it)."""
        delay, tries = RETRY_FIRST, 0
        while True:
            try:
                if tries:  # a retry may come long after the first reads: read afresh
                    leases, found = self._lease_now(job_id), None
                tries += 1
                return self._job.recover_one(job_id, leases, found)
            except FencedError:
                raise
            except StewardError as exc:  # unavailable or a newer record: nothing else
                log.warning(
                    "job recovery waits job=%s epoch=%d retry_in=%.1f error=%r",
                    job_id,
                    self._term.epoch,
                    delay,
                    exc,
                )
            if self._term.stopped.wait(delay):
                return "abandoned"
            delay = min(2 * delay, RETRY_MOST)

    def _lease_now(self, job_id: str) -> dict[str, ExecutionLease]:
        """The job's lease as it is now: a retry may come long after the first read."""
        try:
            lease = self._stores.leases.held(job_id)
        except CorruptStateError:
            lease = None
        return {job_id: lease} if lease is not None else {}

    def recover_one(self, job_id: str, leases: dict[str, ExecutionLease]) -> str:
        """Recover one job now (see :meth:`JobRecovery.recover_one`): a job found after the
        recovery (a submission's own create whose answer was lost)."""
        return self._job.recover_one(job_id, leases)
