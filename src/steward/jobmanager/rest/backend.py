"""What the REST routers need of a JobManager: :class:`ApiBackend`, a structural interface.

The routers never import the JobManager; :class:`~steward.jobmanager.manager.JobManager`
satisfies :class:`ApiBackend` as it is (its ZooKeeper reads are a
:class:`~steward.jobmanager.reads.ClusterReader`, its leadership term a
:class:`~steward.jobmanager.leader.dispatcher.Dispatcher`), and a test can hand the app an
in-memory one. Every member listed here is used by a route; nothing else of the JobManager is
reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from steward.config import Configuration
from steward.jobmanager.indexed_job import IndexedJob
from steward.jobmanager.job_index import JobIndex, JobQuery, Page
from steward.security.teams import TeamScope
from steward.store.blob import BlobStore
from steward.wire.doctor import DoctorReport
from steward.wire.heartbeat import Heartbeat, HeartbeatReply
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.queues import QueueList
from steward.wire.records import JobResultEntry, LeaderInfo, LeadershipTerm
from steward.wire.rest import JobManagerView, JobView, TaskManagerView


class Connection(Protocol):
    """The ZooKeeper session, as far as readiness goes."""

    @property
    def connected(self) -> bool: ...


class ClusterReads(Protocol):
    """What any JobManager answers from ZooKeeper alone (a standby answers every read so)."""

    def leader(self) -> LeaderInfo | None: ...

    def jobmanagers(self, leader: LeaderInfo | None) -> list[JobManagerView]: ...

    def leadership(self) -> list[LeadershipTerm]: ...

    def taskmanagers(self) -> list[TaskManagerView]: ...

    def jobs(self) -> list[JobView]: ...

    def page(self, query: JobQuery) -> Page | None:
        """A page of the in-memory job index; None while it is being filled."""
        ...

    def batches(
        self, offset: int, size: int, teams: TeamScope | None = None
    ) -> tuple[int, list[IndexedJob]] | None:
        """Livy batches ``offset`` to ``offset + size``, oldest first, and how many there are
        (``teams``' only, if given); None while the index is being filled."""
        ...

    def note(self, view: JobView) -> None:
        """Index a view this JobManager has just answered a write with."""
        ...

    @property
    def index(self) -> JobIndex:
        """The jobs this JobManager knows (a job's team, without a read)."""
        ...

    def terminated(self) -> list[JobView]: ...

    def job(self, job_id: str) -> JobView | None: ...

    def result(self, job_id: str) -> JobResultEntry | None: ...


class ContentPins(Protocol):
    """The leader's content GC: files a submission names are kept while it is stored."""

    def pinned(self, hashes: Iterable[str]) -> AbstractContextManager[None]: ...


class HeldHeartbeat(Protocol):
    """A heartbeat whose reply the leader holds until a command is queued for its TaskManager
    or :attr:`timeout` seconds pass (long poll); waited on without a thread."""

    @property
    def timeout(self) -> float: ...

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, from any thread, when a command is queued."""
        ...

    def unlisten(self, listener: Callable[[], None]) -> None: ...

    def finish(self, *, block: bool) -> HeartbeatReply | None:
        """The reply; None if ``block`` is False and that would wait (a lock)."""
        ...


class LeaderTerm(Protocol):
    """The leader's term: live jobs in memory, and every write."""

    @property
    def ready(self) -> bool:
        """Recovered: the term answers from memory."""
        ...

    @property
    def stopped(self) -> bool:
        """Ended: writes go to whichever JobManager leads next."""
        ...

    @property
    def content_gc(self) -> ContentPins: ...

    def submit(self, spec: JobSpec, graph: JobGraph) -> JobView: ...

    def cancel(self, job_id: str) -> JobView: ...

    def next_batch_id(self) -> int:
        """A Livy batch id no batch had (a fenced counter in ZooKeeper)."""
        ...

    def take_heartbeat(
        self, beat: Heartbeat, *, block: bool
    ) -> HeartbeatReply | HeldHeartbeat | None:
        """Take a TaskManager's heartbeat: the reply, or the reply held (long poll). With
        ``block`` False (on the event loop) None instead of waiting for a lock or a store."""
        ...

    def view(self, job_id: str, *, with_checkpoints: bool = True) -> JobView | None: ...

    def views(self) -> list[JobView]: ...

    def taskmanagers(self) -> list[TaskManagerView]: ...

    def queues(self) -> QueueList:
        """The queues as the scheduler's latest pass found them."""
        ...


class ApiBackend(Protocol):
    """A JobManager as its REST API sees it."""

    @property
    def id(self) -> str: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def session(self) -> Connection: ...

    @property
    def reader(self) -> ClusterReads: ...

    @property
    def dispatcher(self) -> LeaderTerm | None:
        """The current term while this JobManager leads (or has just stopped leading)."""
        ...

    @property
    def blobs(self) -> BlobStore:
        """Where uploaded contents are stored."""
        ...

    @property
    def config(self) -> Configuration:
        """Its validated configuration: the routes read ``config.settings``."""
        ...

    def leader(self) -> LeaderInfo | None:
        """The leader this JobManager knows of (its own view, kept current by a watch)."""
        ...

    def cluster_id(self) -> str: ...

    def takeover_blocker(self) -> str | None:
        """Why this JobManager could not yet take over quickly if the leader crashed (not in
        line, no leader known, its crash detector has not seen the leader alive), or None."""
        ...

    def doctor(self, *, verify_blobs: bool = False) -> DoctorReport:
        """What ``steward doctor`` finds, read on this JobManager's own session."""
        ...
