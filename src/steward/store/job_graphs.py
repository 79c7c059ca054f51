"""The JobGraphStore: every submitted job's spec and artifact, kept until it needs no recovery.

The job graph goes to a blob; a small :class:`JobGraphPointer` goes to ``jobgraphs/<job-id>``.
The invariant (seed 002): **the pointer exists if and only if a new leader must recover the
job.** To keep it under concurrency:

- add, replace and remove are fenced (rule 2), so a deposed leader cannot remove what
  the new leader added, nor re-add what it removed;
- a blob is written before its pointer and deleted after it, and blobs are never overwritten
  (each write gets a fresh key), so no reader follows a pointer to a deleted or half blob;
- listing for recovery reads every job on its own: a missing or corrupt blob is reported for
  that job alone, never as a failure of the whole recovery (seed 000).

Blobs left without a pointer (a writer that crashed between the two steps) are orphans;
:meth:`JobGraphStore.collect_garbage` deletes those older than a grace period.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from steward.errors import (
    BlobStoreError,
    ConcurrentModificationError,
    CorruptStateError,
    FencedError,
    JobExistsError,
    JobNotFoundError,
    NodeExistsError,
    NoNodeError,
    StewardError,
    StoreError,
)
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.store.blob import BlobRef, BlobStore
from steward.store.group_commit import Absent, Create, GroupCommit
from steward.store.job_graph_garbage import collect_orphans
from steward.wire.jobs import JobGraph, JobGraphPointer
from steward.wire.record_format import (
    DEFAULT_RECORD_FORMAT,
    GRAPH_BLOB_PREFIX,
    decode_pointer,
    encode_pointer,
)

log = logging.getLogger(__name__)

BLOB_PREFIX = GRAPH_BLOB_PREFIX
UNSETTLED_FOR = 120.0
"""Seconds a pointer write whose outcome was unknown is still reported as changed: a request
in flight when the connection broke is committed by the ensemble within seconds, or never."""
POINTER_BATCH = 1000
"""Pointer reads in flight at once (bounds the answers held in memory)."""

# Failures after which the new blob is surely unreferenced. A lost connection is not one of
# them: the transaction may have been applied, so its blob must stay (GC decides later).
DEFINITELY_NOT_APPLIED = (FencedError, NodeExistsError, NoNodeError, ConcurrentModificationError)


@dataclass(frozen=True)
class RecoveredJobGraph:
    """One job's outcome of :meth:`JobGraphStore.recover_all`: its graph or why it has none."""

    job_id: str
    graph: JobGraph | None = None
    error: StewardError | None = None


class JobGraphStore:
    """Job graphs in blobs, pointers in ZooKeeper (written at ``record_format``, read at
    either: ``high-availability.record-format``)."""

    def __init__(
        self, session: Session, blobs: BlobStore, *, record_format: int = DEFAULT_RECORD_FORMAT
    ) -> None:
        self._client = session.client
        self._layout = session.layout
        self._blobs = blobs
        self._format = record_format
        self._changes_lock = threading.Lock()
        self._changed: set[str] = set()
        self._unknown: dict[str, float] = {}
        self._commits = GroupCommit()

    # ------------------------------------------------------------------ writes (fenced)

    def take_changed(self) -> set[str]:
        """Ids of the jobs whose pointer this store wrote, or tried to, since the last call,
        and of those whose write's outcome was unknown within the last :data:`UNSETTLED_FOR`.

        A write is noted once it has returned or failed, so a reader that takes the changes
        and then reads the pointers sees every write not noted for its next call. The leader's
        content collector reads again only these pointers (and those of jobs it does not know):
        within a term this store is the only writer of pointers (the others are fenced)."""
        now = time.monotonic()
        with self._changes_lock:
            changed, self._changed = self._changed, set()
            self._unknown = {j: t for j, t in self._unknown.items() if now - t < UNSETTLED_FOR}
            return changed | set(self._unknown)

    @contextlib.contextmanager
    def _noted(self, job_id: str) -> Iterator[None]:
        try:
            yield
        except DEFINITELY_NOT_APPLIED:
            raise
        except StewardError:
            # A lost connection: the write may still be applied (or be in flight) after this.
            with self._changes_lock:
                self._unknown[job_id] = time.monotonic()
            raise
        finally:
            with self._changes_lock:
                self._changed.add(job_id)

    def put(self, fence: Fence, graph: JobGraph) -> JobGraphPointer:
        """Persist a new job's graph. :class:`JobExistsError` if the job already has one."""
        pointer = self.write_blob(fence, graph)
        self.add(fence, graph.spec.job_id, pointer)
        return pointer

    def write_blob(self, fence: Fence, graph: JobGraph) -> JobGraphPointer:
        """The first half of :meth:`put`: the graph's blob, and the pointer that will name it
        (nothing refers to the blob until :meth:`add` creates that pointer)."""
        key = self._blobs.unique_key(f"{BLOB_PREFIX}/{graph.spec.job_id}")
        return _pointer_to(self._blobs.put(key, graph.to_json()), fence, graph)

    def add(
        self,
        fence: Fence,
        job_id: str,
        pointer: JobGraphPointer,
        also: Sequence[Create] = (),
        *,
        unless: Sequence[str] = (),
    ) -> None:
        """The second half of :meth:`put`: create the pointer, with ``also`` in the same
        fenced transaction, group-committed with concurrent adds (:mod:`group_commit`),
        unless a node of ``unless`` exists (checked in the same transaction, before the rest).

        :class:`JobExistsError` if the job already has a pointer; the NodeExistsError of a
        node of ``unless`` or ``also`` that exists (nothing created either way; the blob is
        discarded).
        """
        with self._noted(job_id):
            self._add(fence, job_id, pointer, also, unless)

    def _add(
        self,
        fence: Fence,
        job_id: str,
        pointer: JobGraphPointer,
        also: Sequence[Create],
        unless: Sequence[str],
    ) -> None:
        path = self._layout.jobgraph(job_id)
        guards = [Absent(node) for node in unless]  # first: the first failure is reported
        try:
            data = encode_pointer(pointer, self._format, job_id)
            self._commits.create(fence, [*guards, Create(path, data), *also])
        except NodeExistsError as exc:
            self._discard(pointer.blob)
            if exc.path != path:
                raise
            existing = self._submission_of(job_id)
            raise JobExistsError(job_id, "job graph", submission_sha256=existing) from exc
        except DEFINITELY_NOT_APPLIED:
            self._discard(pointer.blob)
            raise
        # DEBUG: a submission's own INFO line names the blob (one line a job, not two).
        log.debug("job graph added job=%s epoch=%d blob=%s", job_id, fence.epoch, pointer.blob)

    def replace(self, fence: Fence, graph: JobGraph) -> JobGraphPointer:
        """Swap an existing job's graph for ``graph``; :class:`JobNotFoundError` if it has none."""
        with self._noted(graph.spec.job_id):
            return self._replace(fence, graph)

    def _replace(self, fence: Fence, graph: JobGraph) -> JobGraphPointer:
        job_id = graph.spec.job_id
        path = self._layout.jobgraph(job_id)
        current = zk.read(self._client, path)
        if current is None:
            raise JobNotFoundError(job_id, "job graph")
        ref = self._blobs.put(self._blobs.unique_key(f"{BLOB_PREFIX}/{job_id}"), graph.to_json())
        pointer = _pointer_to(ref, fence, graph)
        try:
            data = encode_pointer(pointer, self._format, job_id)
            fence.transaction().set_data(path, data, current[1].version).commit()
        except DEFINITELY_NOT_APPLIED:
            self._discard(ref.key)
            raise
        self._discard_old(job_id, current[0], keep=ref.key)
        return pointer

    def remove(self, fence: Fence, job_id: str) -> bool:
        """Remove a job's pointer, then its blob. Returns False if there was no pointer.

        Fenced and version-checked: it removes exactly the pointer it read, so it cannot delete
        a graph another leader (re-)added in between.
        """
        with self._noted(job_id):
            return self._remove(fence, job_id)

    def _remove(self, fence: Fence, job_id: str) -> bool:
        path = self._layout.jobgraph(job_id)
        current = zk.read(self._client, path)
        if current is None:
            return False
        try:
            fence.transaction().delete(path, current[1].version).commit()
        except NoNodeError:
            return False
        self._discard_old(job_id, current[0], keep=None)
        log.info("job graph removed job=%s epoch=%d", job_id, fence.epoch)
        return True

    # ------------------------------------------------------------------ reads

    def job_ids(self) -> list[str]:
        """Ids of every job that has a pointer, i.e. that a new leader must recover."""
        return zk.job_children(self._client, self._layout.jobgraphs)

    def contains(self, job_id: str) -> bool:
        return zk.read(self._client, self._layout.jobgraph(job_id)) is not None

    def pointer(self, job_id: str) -> JobGraphPointer:
        current = zk.read(self._client, self._layout.jobgraph(job_id))
        if current is None:
            raise JobNotFoundError(job_id, "job graph")
        return decode_pointer(current[0], job_id)

    def _submission_of(self, job_id: str) -> str | None:
        """The existing job's submission digest, or None when it cannot be read now (the
        duplicate is refused either way; the digest only lets a client recognise its own)."""
        try:
            return self.pointer(job_id).submission_sha256
        except StewardError as exc:
            log.info("submission digest unreadable job=%s error=%r", job_id, exc)
            return None

    def get(self, job_id: str) -> JobGraph:
        """Read a job's graph. Raises JobNotFoundError, CorruptStateError or BlobStoreError."""
        return self.get_with_pointer(job_id)[1]

    def pointers(self, job_ids: list[str]) -> dict[str, JobGraphPointer]:
        """The pointers of ``job_ids`` that exist, read pipelined (one round trip for all).

        Raises CorruptStateError if one cannot be decoded."""
        pointers: dict[str, JobGraphPointer] = {}
        for start in range(0, len(job_ids), POINTER_BATCH):
            batch = job_ids[start : start + POINTER_BATCH]
            found = zk.read_many(self._client, [self._layout.jobgraph(job_id) for job_id in batch])
            for job_id, current in zip(batch, found, strict=True):
                if current is not None:
                    pointers[job_id] = decode_pointer(current[0], job_id)
        return pointers

    def pointers_quietly(
        self, job_ids: list[str]
    ) -> dict[str, JobGraphPointer | CorruptStateError]:
        """Like :meth:`pointers`, but a pointer that cannot be decoded is that job's error
        (seed 000: one bad entry never fails the others' read)."""
        paths = [self._layout.jobgraph(job_id) for job_id in job_ids]
        pointers: dict[str, JobGraphPointer | CorruptStateError] = {}
        for job_id, current in zip(job_ids, zk.read_batched(self._client, paths), strict=True):
            if current is None:
                continue
            try:
                pointers[job_id] = decode_pointer(current[0], job_id)
            except CorruptStateError as exc:
                pointers[job_id] = exc
        return pointers

    def get_with_pointer(self, job_id: str) -> tuple[JobGraphPointer, JobGraph]:
        """The job's pointer and the graph it names, reading the pointer once."""
        pointer = self.pointer(job_id)
        return pointer, self.graph_at(job_id, pointer)

    def graph_at(self, job_id: str, pointer: JobGraphPointer) -> JobGraph:
        """The graph ``pointer`` (read earlier) names; JobNotFoundError if it was removed since."""
        try:
            graph = JobGraph.from_json(self._blobs.get(BlobRef(pointer.blob, pointer.sha256)))
        except BlobStoreError:
            # A concurrent remove deletes the pointer before the blob: if the pointer is
            # gone (or changed) now, the job was removed, which is not corruption.
            if not self._same_pointer(job_id, pointer):
                raise JobNotFoundError(job_id, "job graph") from None
            raise
        if graph.spec.job_id != job_id:
            raise CorruptStateError(
                f"job graph of {job_id!r} holds the spec of job {graph.spec.job_id!r}"
            )
        return graph

    def recover_all(self, parallelism: int = 8) -> list[RecoveredJobGraph]:
        """Read every job graph, each on its own; one bad entry never fails the others."""
        job_ids = self.job_ids()
        with ThreadPoolExecutor(max_workers=max(1, parallelism), thread_name_prefix="jg") as pool:
            return list(pool.map(self._recover_one, job_ids))

    def _recover_one(self, job_id: str) -> RecoveredJobGraph:
        try:
            return RecoveredJobGraph(job_id, graph=self.get(job_id))
        except StewardError as exc:
            log.error("job graph unrecoverable job=%s error=%s", job_id, exc)
            return RecoveredJobGraph(job_id, error=exc)

    # ------------------------------------------------------------------ garbage

    def collect_garbage(self, min_age: float = 3600.0, known: set[str] | None = None) -> list[str]:
        """Delete blobs no pointer names that are older than ``min_age`` seconds (``known``:
        blob keys the caller knows pointers name): :func:`job_graph_garbage.collect_orphans`."""
        return collect_orphans(self, self._blobs, min_age, known)

    # ------------------------------------------------------------------ helpers

    def _same_pointer(self, job_id: str, pointer: JobGraphPointer) -> bool:
        try:
            return self.pointer(job_id) == pointer
        except StoreError:
            return False

    def _discard_old(self, job_id: str, old_pointer: bytes, keep: str | None) -> None:
        try:
            old = decode_pointer(old_pointer, job_id)
        except CorruptStateError:
            return  # an unreadable pointer names no blob we could find; GC takes the rest
        if old.blob != keep:
            self._discard(old.blob)

    def _discard(self, key: str) -> None:
        # Best effort: a blob that cannot be deleted now is an orphan for collect_garbage.
        try:
            self._blobs.delete(key)
        except BlobStoreError as exc:
            log.warning("blob left for garbage collection key=%s error=%s", key, exc)


def _pointer_to(ref: BlobRef, fence: Fence, graph: JobGraph) -> JobGraphPointer:
    return JobGraphPointer(
        blob=ref.key,
        sha256=ref.sha256,
        epoch=fence.epoch,
        submission_sha256=graph.submission_sha256,
    )
