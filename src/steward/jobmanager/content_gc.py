"""Garbage collection of the content store: files no live job names any more.

The leader runs one :class:`ContentCollector` per term (a thread of its Dispatcher). A content
blob is deleted only when all of these hold:

1. no job graph (``jobgraphs/<job-id>``, i.e. a job that may still run) names its hash;
2. it was last changed more than ``jobmanager.contents.retention`` ago, so a file uploaded
   for a submission that has not arrived yet is kept;
3. no submission on this leader named it since the round began reading the job graphs
   (:meth:`ContentCollector.pinned` wraps a submission's "is every file stored?" check and
   the storing of its graph; a graph stored before the round read the graphs is seen there).

If any job graph cannot be read, nothing is collected in that round: the unreadable graph may
name any file. Uploads that a crashed JobManager left half-written go after the same age.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from steward.errors import JobNotFoundError, StewardError
from steward.store.contents import ContentStore
from steward.store.job_graphs import JobGraphStore

log = logging.getLogger(__name__)

MAX_INTERVAL = 600.0
"""Seconds between two collections at most (less with a short retention)."""

ORPHAN_GRAPH_AGE = 3600.0
"""A job graph blob no pointer names is deleted after this long (an add that lost its
connection before its pointer was created leaves one; younger ones may be an add under way)."""


class ContentCollector:
    """Deletes unreferenced, old content blobs; see the module docstring.

    Example::

        collector = ContentCollector(contents, graphs, retention=3600.0)
        with collector.pinned([sha]):
            ...  # check the file is stored, then store the job graph naming it
        collector.run(stopped)  # on a thread of its own, until ``stopped`` is set
    """

    def __init__(
        self,
        contents: ContentStore,
        graphs: JobGraphStore,
        retention: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.contents = contents
        self.retention = retention
        self.interval = max(1.0, min(retention / 2, MAX_INTERVAL))
        self._graphs = graphs
        self._clock = clock
        self._lock = threading.Lock()
        self._pins: collections.Counter[str] = collections.Counter()
        self._named: set[str] = set()
        """Hashes pinned since the current round started reading the job graphs."""

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
        while not stopped.wait(self.interval):
            try:
                self.collect()
                self._graphs.collect_garbage(ORPHAN_GRAPH_AGE)
            except StewardError as exc:
                log.warning("content garbage collection failed error=%s", exc)

    def collect(self) -> list[str]:
        """One round; returns the hashes deleted."""
        cutoff = self._clock() - self.retention
        old = [info.sha256 for info in self.contents.stored() if info.modified < cutoff]
        deleted: list[str] = []
        if old:
            with self._lock:
                self._named.clear()
            referenced = self._referenced()
            if referenced is None:
                return []
            deleted = [sha for sha in old if sha not in referenced and self._delete(sha)]
        for key in self.contents.stale_uploads(cutoff):
            self.contents.discard_upload(key)
        if deleted:
            log.info("unreferenced contents deleted count=%d", len(deleted))
        return deleted

    def _delete(self, sha256: str) -> bool:
        with self._lock:
            if self._pins[sha256] > 0 or sha256 in self._named:
                return False
            self.contents.delete(sha256)
        return True

    def _referenced(self) -> set[str] | None:
        """Every hash a job graph names; None if some graph cannot be read."""
        referenced: set[str] = set()
        for job_id in self._graphs.job_ids():
            try:
                graph = self._graphs.get(job_id)
            except JobNotFoundError:
                continue  # removed meanwhile: it names nothing any more
            except StewardError as exc:
                log.warning("content gc skipped: job graph unreadable job=%s error=%s", job_id, exc)
                return None
            referenced.update(d.sha256 for d in graph.spec.dependencies)
        return referenced
