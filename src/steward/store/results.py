"""The JobResultStore (seed 003): the outcome of every globally terminal job, outliving it.

An entry is created DIRTY the moment a job becomes globally terminal (FINISHED, FAILED,
CANCELED), before any of its HA data is cleaned up, and marked CLEAN once cleanup is done. A
job with an entry is never started again: recovery skips it, resubmission answers with it.
Listing the DIRTY entries lets a new leader finish the cleanups its predecessor left.

Results for years without growing ZooKeeper (rule 7): the body (a :class:`JobResultEntry`, up
to :data:`MAX_ENTRY_BYTES`) goes to blob storage first, content-addressed
(:mod:`steward.store.result_index`); only then is the small fenced index ``results/<job-id>``
created, so an index never names a body that is not stored. Reading follows the index to the
body and checks its SHA-256; a missing or damaged body is a :class:`ResultBodyError` for that
job alone. Entries written before (the whole entry in the node) are read as they are and
migrated by :meth:`JobResultStore.migrate`. A result leaves only through
:meth:`JobResultStore.remove` (the leader's retention policy), index first, then body.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from steward.errors import (
    BlobStoreError,
    ConcurrentModificationError,
    CorruptStateError,
    FencedError,
    JobExistsError,
    JobNotFoundError,
    NodeExistsError,
    NoNodeError,
    ResultBodyError,
    StoreError,
)
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.store.blob import BlobRef, BlobStore, sha256_hex
from steward.store.group_commit import Create
from steward.store.record_feed import NO_FEED, RecordFeed
from steward.store.result_index import ResultNode, body_key, decode, with_index
from steward.wire.records import JobResultEntry, JobResultIndex
from steward.wire.states import CleanupStatus

log = logging.getLogger(__name__)

MAX_ENTRY_BYTES = 512 * 1024
"""A result body's limit: results travel whole in REST answers and events."""

READ_BATCH = zk.READ_BATCH
"""Index nodes read in one pipelined batch when listing (bounded: see ``zk.READ_BATCH``)."""


class ResultTooLargeError(StoreError):
    """A result entry is larger than :data:`MAX_ENTRY_BYTES`."""


class JobResultStore:
    """Results of globally terminal jobs: indexes in ``results/<job-id>``, bodies in blobs;
    ``feed`` hears of every result created, and of the results :meth:`with_result` finds."""

    def __init__(self, session: Session, blobs: BlobStore, feed: RecordFeed = NO_FEED) -> None:
        self._client = session.client
        self._layout = session.layout
        self._blobs = blobs
        self.feed = feed

    # ------------------------------------------------------------------ writes (fenced)

    def create_dirty(
        self, fence: Fence, entry: JobResultEntry, also: Sequence[Create] = ()
    ) -> None:
        """Record that a job is globally terminal. :class:`JobExistsError` if it already is.

        ``also`` is created in the same transaction (the job's end's notification): all or
        nothing with the result."""
        if entry.status is not CleanupStatus.DIRTY:
            raise ValueError("a new result entry must be DIRTY")
        digest = self._put_body(entry)
        index, job_id = _index_of(entry, digest), entry.job_id
        transaction = fence.transaction().create(self._layout.result(job_id), index.to_json())
        for create in also:
            transaction.create(create.path, create.data)
        try:
            transaction.create(self._layout.dirty_result(job_id), b"").commit()
        except NodeExistsError as exc:
            self._discard_unnamed(entry.job_id, digest)
            raise JobExistsError(entry.job_id, "result") from exc
        except FencedError:
            self._discard_unnamed(entry.job_id, digest)
            raise
        self.feed.ended(entry)
        log.info("result recorded job=%s state=%s status=DIRTY", entry.job_id, entry.state)

    def mark_clean(self, fence: Fence, job_id: str) -> JobResultEntry:
        """Mark a job's cleanup done. Idempotent: an entry already CLEAN is returned as is."""
        node = self._node(job_id)
        if node is None:
            raise JobNotFoundError(job_id, "result")
        if node.status is not CleanupStatus.CLEAN:
            index = _index_of(node.legacy, None) if node.index is None else node.index
            clean = index.model_copy(update={"status": CleanupStatus.CLEAN})
            if node.legacy is not None:
                self._put_body(node.legacy)  # a legacy entry is migrated as it is marked
            self._set_index(fence, node, clean, dirty=False)
            log.info("result marked clean job=%s", job_id)
        return self.get(job_id)

    def migrate(self, fence: Fence, job_id: str) -> bool:
        """Move a legacy entry's body to blob storage, leaving the index; False if it was not
        legacy (or is gone). Idempotent and safe to repeat after a crash: the body's key is
        its checksum, and the node changes only if it is still the version read."""
        node = self._node(job_id)
        if node is None or node.legacy is None:
            return False
        self._put_body(node.legacy)
        dirty = node.legacy.status is CleanupStatus.DIRTY
        self._set_index(fence, node, _index_of(node.legacy, None), dirty=dirty)
        log.info("result migrated to blob storage job=%s", job_id)
        return True

    def remove(self, fence: Fence, node: ResultNode) -> bool:
        """Remove a result (retention): the index if unchanged since ``node`` was read, then
        every body of the job. False if the index changed or is gone (nothing removed)."""
        try:
            fence.transaction().delete(self._layout.result(node.job_id), node.version).commit()
        except (NoNodeError, ConcurrentModificationError):
            return False
        for info in self._blobs.list(body_key(node.job_id, "").rstrip("/")):
            self._discard(info.key)
        log.info("result removed job=%s finished_at=%.0f", node.job_id, node.finished_at)
        return True

    # ------------------------------------------------------------------ reads

    def find(self, job_id: str) -> JobResultEntry | None:
        """The job's entry, or None if it has none (it is not globally terminal).

        Raises :class:`ResultBodyError` if its body is missing or damaged."""
        node = self._node(job_id)
        if node is None:
            return None
        return node.legacy if node.legacy is not None else self._body(node)

    def get(self, job_id: str) -> JobResultEntry:
        entry = self.find(job_id)
        if entry is None:
            raise JobNotFoundError(job_id, "result")
        return entry

    def path(self, job_id: str) -> str:
        """The job's index node: a transaction that must not run once the job has a result
        names it (:class:`~steward.store.group_commit.Absent`)."""
        return self._layout.result(job_id)

    def has_result(self, job_id: str) -> bool:
        return zk.read(self._client, self._layout.result(job_id)) is not None

    def job_ids(self) -> list[str]:
        return zk.job_children(self._client, self._layout.results)

    def dirty_ids(self) -> list[str]:
        """Jobs whose result is DIRTY (marked as such since results moved to blob storage; an
        older version's DIRTY entries are found by the migration's round): one listing, as
        long as the cleanups under way, whatever the number of results kept."""
        return zk.job_children(self._client, self._layout.dirty_results)

    def with_result(self, job_ids: list[str]) -> set[str]:
        """Those of ``job_ids`` that have a result (readable or not), reads pipelined."""
        found = {job_id for job_id, read in self._read_batched(job_ids) if read is not None}
        self.feed.have_results(found)
        return found

    def nodes(self, job_ids: list[str] | None = None) -> list[ResultNode]:
        """Every readable index (no body read), in pipelined batches; an unreadable one is
        logged and left out. What recovery and retention decide on."""
        ids = self.job_ids() if job_ids is None else job_ids
        found = (_decoded_or_none(job_id, read) for job_id, read in self._read_batched(ids))
        return [node for node in found if node is not None]

    def entries(self, parallelism: int = 8) -> list[JobResultEntry]:
        """Every readable entry with its body; an unreadable one is logged and left out."""
        with ThreadPoolExecutor(max_workers=max(1, parallelism), thread_name_prefix="jrs") as pool:
            found = pool.map(self._find_or_none, self.job_ids())
            return [entry for entry in found if entry is not None]

    def list_dirty(self) -> list[JobResultEntry]:
        """Entries whose cleanup is not done (:meth:`dirty_ids`, read with their bodies)."""
        found = map(self._find_or_none, self.dirty_ids())
        return [e for e in found if e is not None and e.status is CleanupStatus.DIRTY]

    # ------------------------------------------------------------------ helpers

    def _read_batched(self, job_ids: list[str]) -> Iterator[tuple[str, tuple[bytes, Any] | None]]:
        for start in range(0, len(job_ids), READ_BATCH):
            batch = job_ids[start : start + READ_BATCH]
            paths = [self._layout.result(job_id) for job_id in batch]
            yield from zip(batch, zk.read_many(self._client, paths), strict=True)

    def _node(self, job_id: str) -> ResultNode | None:
        current = zk.read(self._client, self._layout.result(job_id))
        return None if current is None else decode(job_id, *current)

    def _body(self, node: ResultNode, *, again: bool = True) -> JobResultEntry | None:
        assert node.index is not None
        key = body_key(node.job_id, node.index.sha256)
        try:
            body = JobResultEntry.from_json(self._blobs.get(BlobRef(key, node.index.sha256)))
        except (BlobStoreError, CorruptStateError) as exc:
            # The index may have changed meanwhile (removed by retention, migrated): only a
            # body the current index still names is an error.
            now = self._node(node.job_id) if again else node
            if now is None:
                return None
            if now.version != node.version:
                return now.legacy if now.legacy is not None else self._body(now, again=False)
            raise ResultBodyError(
                f"the result of job {node.job_id!r} names body {key}, which cannot be read:"
                f" {exc}. The job is still never re-run; restore the blob from a backup or"
                " remove the index (docs/operations.md, results)"
            ) from exc
        if body.job_id != node.job_id:
            raise ResultBodyError(f"result body {key} holds the result of job {body.job_id!r}")
        return with_index(body, node)

    def _put_body(self, entry: JobResultEntry) -> str:
        body = entry.to_json()
        if len(body) > MAX_ENTRY_BYTES:
            raise ResultTooLargeError(
                f"result of job {entry.job_id!r} is {len(body)} bytes encoded; the limit is"
                f" {MAX_ENTRY_BYTES} (return a path to large outputs instead)"
            )
        digest = sha256_hex(body)
        self._blobs.put(body_key(entry.job_id, digest), body)
        return digest

    def _set_index(
        self, fence: Fence, node: ResultNode, index: JobResultIndex, *, dirty: bool
    ) -> None:
        """Replace the index read as ``node``; its DIRTY marker made to match ``dirty``."""
        path, marker = self._layout.result(node.job_id), self._layout.dirty_result(node.job_id)
        transaction = fence.transaction().set_data(path, index.to_json(), node.version)
        marked = zk.read(self._client, marker) is not None
        if dirty and not marked:
            transaction.create(marker, b"")
        elif marked and not dirty:
            transaction.delete(marker)
        try:
            transaction.commit()
        except NoNodeError as exc:
            raise JobNotFoundError(node.job_id, "result") from exc

    def _discard_unnamed(self, job_id: str, digest: str) -> None:
        """Delete a body no index names (a create refused); one an index names stays."""
        try:
            node = self._node(job_id)
        except StoreError:
            return  # cannot tell: leave it (a retention removal takes the job's folder)
        if node is None or node.index is None or node.index.sha256 != digest:
            self._discard(body_key(job_id, digest))

    def _discard(self, key: str) -> None:
        try:
            self._blobs.delete(key)
        except BlobStoreError as exc:
            log.warning("result body left behind key=%s error=%s", key, exc)

    def _find_or_none(self, job_id: str) -> JobResultEntry | None:
        try:
            return self.find(job_id)
        except (CorruptStateError, BlobStoreError) as exc:
            log.error("unreadable result entry job=%s error=%s", job_id, exc)
            return None


def _index_of(entry: JobResultEntry | None, digest: str | None) -> JobResultIndex:
    """The index of ``entry`` (its body's checksum computed unless given)."""
    assert entry is not None
    sha = digest if digest is not None else sha256_hex(entry.to_json())
    finished = round(entry.finished_at, 3)  # milliseconds: the index stays under 200 bytes
    return JobResultIndex(state=entry.state, status=entry.status, sha256=sha, finished_at=finished)


def _decoded_or_none(job_id: str, read: tuple[bytes, Any] | None) -> ResultNode | None:
    if read is None:
        return None
    try:
        return decode(job_id, *read)
    except CorruptStateError as exc:
        log.error("unreadable result entry job=%s error=%s", job_id, exc)
        return None
