"""The Dispatcher: one term of leadership, composed of the parts beside it in ``leader/``.

Created when leadership is granted, stopped when it is revoked. It builds the term's parts
around one job table (its stores, settings and clock passed in), starts the term's threads and
answers for the term to the REST API and the JobManager process:

- ``leader/recovery.py``: recovery on grant (rules 6-8), a step that fills the job table
  before the scheduler starts and the term answers writes;
- ``leader/submissions.py``: submissions and cancels; ``leader/initialization.py``: the
  initialize hook round, in a child process;
- ``leader/heartbeats.py``: the TaskManagers' reports in, acknowledgements and commands out;
- ``leader/membership.py``: which TaskManagers are members, and lost TaskManagers and attempts;
- ``leader/scheduler.py``: the scheduling loop (no free slot means SCHEDULED, rule 9), fair
  between queues (``leader/queues.py``);
  ``leader/timeouts.py`` and ``leader/deadlines.py``: jobs past their timeout cancelled;
- ``leader/records.py`` and ``leader/cleanup.py``: status records, results (DIRTY first), then
  cleanup and CLEAN (rule 7); ``leader/late_records.py``: the records of jobs recovered from
  their records, rewritten once the term is ready; ``leader/retention.py``: results'
  retention and their migration to blob storage; ``leader/views.py``: the live jobs' views;
- ``leader/content_gc.py`` and ``log_retention.py``: unreferenced stored files and archived
  attempt logs past their retention, each on a thread of the term.

Every ZooKeeper write goes through the term's fence, so a deposed Dispatcher that has not yet
noticed cannot change anything: its first write fails with FencedError and it stops itself.
One lock (the job table's) guards the in-memory state; ZooKeeper calls made under it are single
round trips. Attempts running on TaskManagers are never touched by a stop: the next leader
adopts them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from steward.config import Configuration
from steward.errors import FencedError, StewardError
from steward.ha.election import Leadership
from steward.ha.session import Session
from steward.metrics import JobManagerMetrics
from steward.store.batch_ids import BatchIdCounter
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.store.leadership import LeadershipHistoryStore
from steward.store.log_archive import LogArchive
from steward.store.record_feed import NO_FEED, RecordFeed
from steward.store.warm_records import WarmRecords
from steward.wire.heartbeat import Heartbeat, HeartbeatReply
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.queues import QueueList
from steward.wire.records import LeadershipTerm
from steward.wire.rest import JobView, TaskManagerView

from ..hooks import HookRunner
from ..log_retention import LogRetention
from .backlog import WaitingReasons
from .cleanup import Cleanup
from .content_gc import ContentCollector
from .context import TermContext
from .delivery import Delivery
from .graph_checks import AdoptedGraphs
from .heartbeats import Heartbeats
from .initialization import Initialization
from .late_records import LateRecords
from .long_poll import HeldHeartbeat
from .membership import Membership
from .records import Records
from .recovery import Recovery
from .retention import ResultRetention
from .scheduler import Scheduler
from .stores import LeaderStores
from .submissions import Submissions
from .table import JobTable
from .term import Term
from .timeouts import Timeouts
from .views import Views

__all__ = ["Dispatcher"]

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        session: Session,
        leadership: Leadership,
        config: Configuration,
        *,
        blobs: BlobStore,
        jobmanager_id: str,
        hooks: HookRunner,
        on_fenced: Callable[[], None] = lambda: None,
        metrics: JobManagerMetrics | None = None,
        address: str = "",
        feed: RecordFeed = NO_FEED,
        warm: WarmRecords | None = None,
    ) -> None:
        self.session = session
        self.address = address
        self._feed = feed
        self.epoch = leadership.epoch
        self.fence = leadership.fence
        self.config = config
        self.id = jobmanager_id
        self.term = term = Term.of(leadership, config, jobmanager_id, on_fenced)
        term.metrics = metrics or term.metrics
        self.table = table = JobTable()
        self.stores = stores = LeaderStores.open(session, blobs, config, jobmanager_id, feed)
        # Content GC hook: the leader's collection of unreferenced files (content_gc.py).
        self.content_gc = ContentCollector(
            ContentStore(blobs),
            stores.graphs,
            retention=config.settings.jobmanager.contents_retention,
            fence=leadership.fence,
        )
        self.log_retention = LogRetention(
            LogArchive(blobs), config.settings.log_archive, fence=leadership.fence
        )
        ctx = TermContext(term, table, stores, hooks)
        self._cleanup = Cleanup(ctx)
        self._retention = ResultRetention(term, stores, resume=self._cleanup.put)
        term.when_stopped(table.rm.wake_all)
        term.when_stopped(hooks.cancel_all)
        cluster_id = config.settings.zookeeper.cluster_id
        self._delivery = Delivery(term, stores.outbox, cluster_id)  # notifications hook
        records = Records(ctx, self._cleanup, self._delivery)
        reasons = WaitingReasons()
        initialization = Initialization(ctx, records, reasons)
        self._membership = Membership(ctx, records, initialization)
        self._late = LateRecords(ctx, records)
        self._recovery = Recovery(
            ctx,
            records=records,
            cleanup=self._cleanup,
            initialization=initialization,
            membership=self._membership,
            late=self._late,
            warm=warm,
        )
        self._submissions = Submissions(
            ctx, records=records, initialization=initialization, recovery=self._recovery
        )
        self._heartbeats = Heartbeats(ctx, records, on_stranger=self._membership.notice_change)
        timeouts = Timeouts(ctx, self._submissions.cancel_live)
        self._scheduler = Scheduler(
            ctx, records, self._membership, timeouts=timeouts, reasons=reasons
        )
        self._views = Views(ctx)
        self._graphs = AdoptedGraphs(ctx, records)
        self._threads: list[threading.Thread] = []
        self._granted_at = term.monotonic()
        self._granted_wall = term.wall()
        self.recovery_summary: dict[str, int] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def ready(self) -> bool:
        return self.term.ready.is_set()

    @property
    def stopped(self) -> bool:
        return self.term.stopped.is_set()

    def start(self) -> Dispatcher:
        self._start_thread("recover", self._run)
        return self

    def _start_background(self) -> None:
        """The membership watch and the term's other threads, once recovery is done.

        Recovery first: a cleanup's fenced writes would queue ahead of its reads in the
        session, and the notifications' HTTP client loads the CA certificates holding the
        interpreter's lock for tens of milliseconds; either, started at the grant, delayed a
        crash failover of three jobs by 70 ms (``benchmarks/failover_floor.py``). The watch
        misses nothing by coming after recovery's read of the members: its first callback
        marks the membership changed, so the first scheduling pass reads it again."""
        self._membership.watch()
        for name, target in (
            ("late-records", self._late.run),
            ("cleanup", self._cleanup.run),
            ("result-retention", self._retention.run),
            ("content-gc", lambda: self.content_gc.run(self.term.stopped)),  # content GC hook
            ("log-retention", lambda: self.log_retention.run(self.term.stopped)),
            ("notifications", self._delivery.run),
            ("adopted-graphs", self._graphs.run),
        ):
            self._start_thread(name, target)

    def _start_thread(self, name: str, target: Callable[[], object]) -> None:
        thread = threading.Thread(target=target, name=f"{self.id}-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        """End the term: stop scheduling and cleanup. Running attempts are left alone."""
        self.term.stop()

    def _run(self) -> None:
        """Recover first; only then is the term ready and the scheduler running."""
        try:
            self.recovery_summary = self._recovery.recover()
            if self.term.stopped.is_set():
                return  # ended while recovery waited for a store: the next leader recovers
            self.term.ready.set()
            self._heartbeats.recovered()
            self._feed.recovered()
            self.term.metrics.recovery_duration.observe(self.term.monotonic() - self._granted_at)
            self._start_background()
        except FencedError as exc:
            self.term.fenced(exc)
            return
        except Exception:
            log.exception("recovery failed epoch=%d; stepping down", self.epoch)
            self.stop()
            self.term.on_fenced()
            return
        self._record_term()
        self._scheduler.run()

    def _record_term(self) -> None:
        """Add this term to leader/history (one fenced write; failing costs only history)."""
        term = LeadershipTerm(
            epoch=self.epoch,
            contender=self.id,
            address=self.address,
            granted_at=self._granted_wall,
            ready_at=self.term.wall(),
            jobs=self.recovery_summary.get("jobs", 0),
            adopted=self.recovery_summary.get("adopted", 0),
        )
        try:
            LeadershipHistoryStore(self.session).record(self.fence, term)
        except FencedError as exc:
            self.term.fenced(exc)
        except StewardError as exc:
            log.warning("leadership history not recorded epoch=%d error=%s", self.epoch, exc)

    # ------------------------------------------------------------------ what the term answers

    def submit(self, spec: JobSpec, graph: JobGraph) -> JobView:
        """Persist a new job's graph and schedule it.

        Raises JobResultExistsError (the id has a result) or JobExistsError (it is live, or
        being submitted).
        """
        with self.term.metrics.submission_latency.time():
            return self._submissions.submit(spec, graph)

    def cancel(self, job_id: str) -> JobView:
        return self._submissions.cancel(job_id)

    def next_batch_id(self) -> int:
        """The next Livy batch id (:mod:`steward.store.batch_ids`), through the fence."""
        try:
            return BatchIdCounter(self.session).next(self.fence)
        except FencedError as exc:
            self.term.fenced(exc)
            raise

    def take_heartbeat(
        self, beat: Heartbeat, *, block: bool
    ) -> HeartbeatReply | HeldHeartbeat | None:
        """Take a TaskManager's reports: its reply (acknowledgements and commands), held until
        a command is queued (long poll), or None (``block`` False: it would wait)."""
        return self._heartbeats.take(beat, block=block)

    def view(self, job_id: str, *, with_checkpoints: bool = True) -> JobView | None:
        """The live job's view, or None if this leader has no such live job."""
        return self._views.view(job_id, with_checkpoints=with_checkpoints)

    def views(self) -> list[JobView]:
        return self._views.views()

    def taskmanagers(self) -> list[TaskManagerView]:
        return self._views.taskmanagers()

    def queues(self) -> QueueList:
        return self._scheduler.queues()
