"""Per-job checkpoint state: the CheckpointIDCounter and the CompletedCheckpointStore.

``jobs/<job-id>/checkpoint-counter`` holds the next checkpoint id as a decimal int64, moved only
by a fenced compare-and-set, so two leaders can never hand out the same id (seed 001 shows
what happens when they try). ``jobs/<job-id>/checkpoints/<%019d>`` holds one
:class:`CheckpointPointer` per retained checkpoint (the ``checkpoints`` container is created
with a job's first checkpoint: a job without one has none); the metadata itself is a blob. Adding a
checkpoint and dropping the ones beyond the retention limit is one fenced transaction; their
blobs are deleted afterwards, so no pointer ever names a deleted blob.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from steward.errors import (
    BlobStoreError,
    ConcurrentModificationError,
    CorruptStateError,
    FencedError,
    NodeExistsError,
    NoNodeError,
    StewardError,
)
from steward.ha.fencing import Fence
from steward.ha.layout import Layout
from steward.ha.session import Session
from steward.store import zk
from steward.store.blob import BlobRef, BlobStore
from steward.store.counters import FencedCounter
from steward.store.outcomes import is_outcome_name
from steward.wire.records import CheckpointPointer, CompletedCheckpoint

log = logging.getLogger(__name__)

BLOB_PREFIX = "checkpoints"


def ensure_job_node(client: KazooClient, layout: Layout, fence: Fence, job_id: str) -> None:
    # The per-job container is created through the fence too: a deposed leader must not
    # re-create the state of a job the new leader has already cleaned up. Its checkpoints'
    # container comes with the job's first checkpoint (CompletedCheckpointStore.add): most
    # jobs never make one, and an empty znode is bytes in ZooKeeper for every live job.
    if zk.read(client, layout.job(job_id)) is not None:
        return
    with contextlib.suppress(NodeExistsError):
        fence.transaction().create(layout.job(job_id), b"").commit()


class CheckpointIDCounter:
    """The job's checkpoint id sequence, starting at 1."""

    def __init__(self, session: Session, job_id: str) -> None:
        self._client = session.client
        self._layout = session.layout
        self.job_id = job_id
        self._path = session.layout.checkpoint_counter(job_id)
        self._counter = FencedCounter(
            self._client,
            self._path,
            name=f"checkpoint counter of {job_id!r}",
            first=1,
            last=2**63 - 1,
            ensure_parent=self._ensure_job_node,
        )

    def get(self) -> int:
        """The next id that :meth:`get_and_increment` would hand out."""
        return self._counter.peek()

    def get_and_increment(self, fence: Fence) -> int:
        """Hand out the next checkpoint id; fenced, and safe against concurrent callers."""
        return self._counter.get_and_increment(fence)

    def set(self, fence: Fence, value: int) -> None:
        """Set the next id (used when restoring); fenced."""
        if value < 1:
            raise ValueError("checkpoint ids start at 1")
        if zk.read(self._client, self._path) is None:
            self._ensure_job_node(fence)
            fence.transaction().create(self._path, str(value).encode()).commit()
        else:
            fence.transaction().set_data(self._path, str(value).encode()).commit()

    def _ensure_job_node(self, fence: Fence) -> None:
        ensure_job_node(self._client, self._layout, fence, self.job_id)


@dataclass(frozen=True)
class RecoveredCheckpoint:
    """The latest valid checkpoint (or None) and the newer ones skipped because unreadable."""

    checkpoint: CompletedCheckpoint | None
    skipped: list[tuple[int, StewardError]] = field(default_factory=list)


class CompletedCheckpointStore:
    """The newest ``retained`` completed checkpoints of one job."""

    def __init__(self, session: Session, blobs: BlobStore, job_id: str, retained: int) -> None:
        if retained < 1:
            raise ValueError("retained must be at least 1")
        self._client = session.client
        self._layout = session.layout
        self._blobs = blobs
        self.job_id = job_id
        self.retained = retained

    def checkpoint_ids(self) -> list[int]:
        names = zk.children(self._client, self._layout.checkpoints(self.job_id))
        return sorted(int(name) for name in names if name.isdigit())

    def add(self, fence: Fence, checkpoint: CompletedCheckpoint) -> CheckpointPointer:
        """Record a completed checkpoint and drop the oldest beyond the retention limit."""
        if checkpoint.job_id != self.job_id:
            raise ValueError(f"checkpoint of {checkpoint.job_id!r} added to {self.job_id!r}")
        cid = checkpoint.checkpoint_id
        # Every ZooKeeper step that can fail comes before the blob is written: a fenced
        # ensure_job_node (a deposed leader's first checkpoint of a job) used to leave the
        # blob behind, and nothing but remove_all would ever delete it.
        ensure_job_node(self._client, self._layout, fence, self.job_id)
        existing = self.checkpoint_ids()
        doomed = [old for old in existing if old != cid][
            : max(0, len(existing) + 1 - self.retained)
        ]
        doomed_pointers = [self._read_pointer_or_none(old) for old in doomed]
        ref = self._blobs.put(
            self._blobs.unique_key(f"{BLOB_PREFIX}/{self.job_id}", f"-{cid:019d}"),
            checkpoint.to_json(),
        )
        pointer = CheckpointPointer(
            checkpoint_id=cid, blob=ref.key, sha256=ref.sha256, epoch=fence.epoch
        )
        txn = fence.transaction()
        if not existing and zk.read(self._client, self._layout.checkpoints(self.job_id)) is None:
            txn.create(self._layout.checkpoints(self.job_id), b"")  # the job's first checkpoint
        txn.create(self._layout.checkpoint(self.job_id, cid), pointer.to_json())
        for old in doomed:
            txn.delete(self._layout.checkpoint(self.job_id, old))
        try:
            txn.commit()
        except (FencedError, NodeExistsError, NoNodeError, ConcurrentModificationError):
            self._discard(ref.key)
            raise
        for old_pointer in doomed_pointers:
            if old_pointer is not None:
                self._discard(old_pointer.blob)
        log.info(
            "checkpoint completed job=%s checkpoint=%d epoch=%d", self.job_id, cid, fence.epoch
        )
        return pointer

    def latest(self) -> RecoveredCheckpoint:
        """The newest checkpoint that reads back intact; corrupt newer ones are reported."""
        skipped: list[tuple[int, StewardError]] = []
        for cid in reversed(self.checkpoint_ids()):
            try:
                return RecoveredCheckpoint(self.get(cid), skipped)
            except (CorruptStateError, BlobStoreError, NoNodeError) as exc:
                log.error("checkpoint skipped job=%s checkpoint=%d error=%s", self.job_id, cid, exc)
                skipped.append((cid, exc))
        return RecoveredCheckpoint(None, skipped)

    def get(self, checkpoint_id: int) -> CompletedCheckpoint:
        pointer = self._read_pointer(checkpoint_id)
        if pointer is None:
            raise NoNodeError(self._layout.checkpoint(self.job_id, checkpoint_id))
        checkpoint = CompletedCheckpoint.from_json(
            self._blobs.get(BlobRef(pointer.blob, pointer.sha256))
        )
        if checkpoint.checkpoint_id != checkpoint_id or checkpoint.job_id != self.job_id:
            raise CorruptStateError(
                f"checkpoint {checkpoint_id} of {self.job_id!r} holds another checkpoint's data"
            )
        return checkpoint

    def remove_all(self, fence: Fence) -> None:
        """Delete the job's checkpoints, its counter and its container (job cleanup); fenced."""
        ids = self.checkpoint_ids()
        txn = fence.transaction()
        for cid in ids:
            txn.delete(self._layout.checkpoint(self.job_id, cid))
        if zk.read(self._client, self._layout.checkpoints(self.job_id)) is not None:
            txn.delete(self._layout.checkpoints(self.job_id))
        if zk.read(self._client, self._layout.checkpoint_counter(self.job_id)) is not None:
            txn.delete(self._layout.checkpoint_counter(self.job_id))
        if zk.read(self._client, self._layout.job(self.job_id)) is not None:
            # Attempts' outcome records (store/outcomes.py) go with the job's node.
            for name in zk.children(self._client, self._layout.job(self.job_id)):
                if is_outcome_name(name):
                    txn.delete(f"{self._layout.job(self.job_id)}/{name}")
            txn.delete(self._layout.job(self.job_id))
        if len(txn):
            txn.commit()
        # Every pointer is gone, so every blob of the job is unreferenced now.
        for info in self._blobs.list(f"{BLOB_PREFIX}/{self.job_id}"):
            self._discard(info.key)

    def _read_pointer(self, checkpoint_id: int) -> CheckpointPointer | None:
        current = zk.read(self._client, self._layout.checkpoint(self.job_id, checkpoint_id))
        return CheckpointPointer.from_json(current[0]) if current else None

    def _read_pointer_or_none(self, checkpoint_id: int) -> CheckpointPointer | None:
        try:
            return self._read_pointer(checkpoint_id)
        except CorruptStateError:
            return None  # its blob, if any, is removed with the job's other blobs at cleanup

    def _discard(self, key: str) -> None:
        try:
            self._blobs.delete(key)
        except BlobStoreError as exc:
            log.warning("checkpoint blob left behind key=%s error=%s", key, exc)
