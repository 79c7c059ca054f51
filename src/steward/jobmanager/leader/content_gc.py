"""Garbage collection of the content store: files no live job names any more.

The leader runs one :class:`ContentCollector` per term (a thread of its Dispatcher). A content
blob is deleted only when all of these hold:

1. no job graph (``jobgraphs/<job-id>``, i.e. a job that may still run) names its hash;
2. it was last changed or touched more than ``jobmanager.contents.retention`` ago, so a file
   uploaded for a submission that has not arrived yet is kept, and so is one a client has just
   asked for (HEAD) or uploaded again (both touch it): the client's POST follows;
3. no submission on this leader pinned it during the round, counting the pins already held when
   the round began (:meth:`ContentCollector.pinned` wraps a submission's "is every file stored?"
   check and the storing of its graph; a pin released before the round began belongs to a graph
   stored before the round listed the job graphs, on the same ZooKeeper session, so the listing
   sees it);
4. just before the delete, the leader's epoch is confirmed current (a fenced transaction of the
   check alone), the file's age is read again, and the delete happens within ``fence_window``
   of that confirmation: a deposed leader's round stops, and a frozen one cannot delete after
   the freeze, because a new leader exists only once the frozen one's session has expired, a
   session timeout after its last message, and the window is a third of that.

If any job graph cannot be read, nothing is collected in that round: the unreadable graph may
name any file. Uploads that a crashed JobManager left half-written go after the same age.

A round costs what changed: the collector keeps each job's graph identity (its blob's key and
hash; blobs are never overwritten) and the hashes it names. A round lists the job ids (one
read) and reads again only the pointers of jobs it does not know and of jobs the term's
:class:`JobGraphStore` wrote since the last round (within a term it is the only writer; the
others are fenced; a write of unknown outcome is reported for two minutes), every pointer each
:data:`FULL_CHECK_EVERY` rounds, and a graph only for a pointer it has not seen (and only when
some file is old enough to judge). The orphan sweep of job graph blobs gets the keys it saw,
so it reads only the pointers of jobs with an old blob outside them.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from steward.errors import CorruptStateError, JobNotFoundError, StewardError
from steward.ha.fencing import Fence
from steward.store.contents import ContentStore
from steward.store.job_graphs import JobGraphStore
from steward.wire.jobs import JobGraphPointer

log = logging.getLogger(__name__)

MAX_INTERVAL = 600.0
"""Seconds between two collections at most (less with a short retention)."""

ORPHAN_GRAPH_AGE = 3600.0
"""A job graph blob no pointer names is deleted after this long (an add that lost its
connection before its pointer was created leaves one; younger ones may be an add under way)."""

Known = tuple[JobGraphPointer, frozenset[str] | None]
"""A job's pointer and the hashes its graph names (None: the graph not read yet)."""

FULL_CHECK_EVERY = 36
"""Every this many rounds (6 hours at the longest interval) every pointer is read again: a
safety net under the premise that this term's store is the only writer of pointers."""


class ContentCollector:
    """Deletes unreferenced, old content blobs; see the module docstring.

    Example::

        collector = ContentCollector(contents, graphs, retention=3600.0, fence=leadership.fence)
        with collector.pinned([sha]):
            ...  # check the file is stored, then store the job graph naming it
        collector.run(stopped)  # on a thread of its own, until ``stopped`` is set
    """

    def __init__(
        self,
        contents: ContentStore,
        graphs: JobGraphStore,
        retention: float,
        *,
        fence: Fence,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        fence_window: float | None = None,
        full_check_every: int = FULL_CHECK_EVERY,
    ) -> None:
        self.contents = contents
        self.retention = retention
        self.interval = max(1.0, min(retention / 2, MAX_INTERVAL))
        self.fence_window = fence.timeout / 3 if fence_window is None else fence_window
        self._graphs = graphs
        self._fence = fence
        self._clock = clock
        self._monotonic = monotonic
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._pins: collections.Counter[str] = collections.Counter()
        self._named: set[str] = set()
        """Hashes pinned during the current round, those pinned when it began included."""
        self._by_job: dict[str, Known] = {}
        """Each job's pointer and the hashes its graph names, kept between rounds."""
        self._unsettled: set[str] = set()
        """Jobs written since the last round that completed: their pointers are read again."""
        self._rounds = 0
        self._full_check_every = full_check_every

    @contextlib.contextmanager
    def pinned(self, hashes: Iterable[str]) -> Iterator[None]:
        """Keep these blobs while the block runs (a submission that names them)."""
        pins = list(hashes)
        with self._lock:
            self._pins.update(pins)
            self._named.update(pins)
        try:
            yield
        finally:
            with self._lock:
                self._pins.subtract(pins)
                self._pins = +self._pins  # drop the zero counts

    def run(self, stopped: threading.Event) -> None:
        """Collect every :attr:`interval` until ``stopped``; a failed round is retried later."""
        self._stopped = stopped
        while not stopped.wait(self.interval):
            try:
                self.collect()
                self._graphs.collect_garbage(ORPHAN_GRAPH_AGE, self.known_graph_blobs())
            except StewardError as exc:
                log.warning("content garbage collection failed error=%s", exc)

    def collect(self) -> list[str]:
        """One round; returns the hashes deleted. FencedError once this leader is deposed."""
        cutoff = self._clock() - self.retention
        old = [info.sha256 for info in self.contents.stored() if info.modified < cutoff]
        with self._lock:
            # A pin held now may be a submission whose pointer the listing below misses.
            self._named = set(self._pins)
        deleted: list[str] = []
        if self._refresh() and old:
            referenced = self._referenced()
            if referenced is None:
                return []
            deleted = [sha for sha in old if sha not in referenced and self._delete(sha, cutoff)]
        for key in self.contents.stale_uploads(cutoff):
            self.contents.discard_upload(key)
        if deleted:
            log.info("unreferenced contents deleted count=%d", len(deleted))
        return deleted

    def known_graph_blobs(self) -> set[str]:
        """The job graph blob keys the last round saw pointers name (for the orphan sweep)."""
        return {pointer.blob for pointer, _names in self._by_job.values()}

    def _delete(self, sha256: str, cutoff: float) -> bool:
        if self._held(sha256):
            return False
        confirmed_at = self._monotonic()
        self._fence.transaction().commit()  # FencedError: a newer leader owns the store now
        info = self.contents.age(sha256)  # a HEAD or re-upload since the listing renews it
        if info is None or info.modified >= cutoff:
            return False
        with self._lock:
            late = self._monotonic() - confirmed_at > self.fence_window
            if late or self._stopped.is_set() or self._held(sha256):
                log.info("content kept sha256=%s late=%s", sha256, late)
                return False
            self.contents.delete(sha256)
        return True

    def _held(self, sha256: str) -> bool:
        return self._pins[sha256] > 0 or sha256 in self._named

    def _refresh(self) -> bool:
        """Bring the pointers up to date; False if one cannot be read (nothing is collected).

        Read again: the pointers of jobs this term's store wrote since the last round, of jobs
        not known yet, and every pointer each :data:`FULL_CHECK_EVERY` rounds. Within a term this
        store is the only writer (it reports a write of unknown outcome for a while)."""
        self._unsettled |= self._graphs.take_changed()
        full = self._rounds % self._full_check_every == 0
        job_ids = self._graphs.job_ids()
        stale = [j for j in job_ids if full or j in self._unsettled or j not in self._by_job]
        try:
            pointers = self._graphs.pointers(stale)
        except CorruptStateError as exc:
            log.warning("content gc skipped: a job graph pointer is unreadable error=%s", exc)
            return False
        current = {j: self._by_job[j] for j in set(job_ids) - set(stale)}
        for job_id, pointer in pointers.items():
            known = self._by_job.get(job_id)
            same = known is not None and _same_graph(known[0], pointer)
            current[job_id] = known if same and known is not None else (pointer, None)
        self._by_job, self._unsettled = current, set()  # jobs gone are forgotten
        self._rounds += 1
        return True

    def _referenced(self) -> set[str] | None:
        """Every hash a job graph names, reading the graphs not read yet; None if one of them
        cannot be read (it may name any file)."""
        referenced: set[str] = set()
        for job_id, (pointer, known) in list(self._by_job.items()):
            names = known if known is not None else self._read_names(job_id, pointer)
            if names is None:
                return None
            self._by_job[job_id] = (pointer, names)
            referenced |= names
        return referenced

    def _read_names(self, job_id: str, pointer: JobGraphPointer) -> frozenset[str] | None:
        try:
            graph = self._graphs.graph_at(job_id, pointer)
        except JobNotFoundError:
            # Removed meanwhile (it names nothing any more), unless its pointer changed: then
            # this round cannot know what the new graph names.
            return frozenset() if not self._graphs.pointers([job_id]) else None
        except StewardError as exc:
            log.warning("content gc skipped: job graph unreadable job=%s error=%s", job_id, exc)
            return None
        return frozenset(d.sha256 for d in graph.spec.dependencies)


def _same_graph(one: JobGraphPointer, other: JobGraphPointer) -> bool:
    """Whether two pointers name the same blob (blobs are never overwritten)."""
    return one.blob == other.blob and one.sha256 == other.sha256
