"""Group commit: the fenced creates of many concurrent writers in one ZooKeeper transaction.

A submission is acknowledged only once its job graph pointer is created through the fence
(rule 2). Under load most of that is the round trip and kazoo's per-request work, the same
for one create as for a hundred; so concurrent writers queue their creates here and one of
them, the committer of the moment, sends everything queued as one fenced multi-op (one epoch
check, every create). Nothing waits for a batch to fill: a writer that finds no commit in
flight commits its own at once; while that commit is out, the next writers queue, and the
first of them commits the lot when it returns (leader/follower group commit). One writer
alone pays one round trip, as before; N waiting writers pay about one between them.

The transaction is all or nothing, and so is each writer's share: when one create fails
(its node exists: a duplicate job id) nothing is applied, that writer gets its error, and
the others are committed again without it. A fence that no longer holds, or a commit whose
answer did not come, is every writer's error (each treats it as it treats its own today:
rejected, or outcome unknown). Writers with different fences (an old term's straggler) are
never batched together.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from steward.errors import StewardError, StoreError
from steward.ha.fencing import Fence

MAX_OPS = 500
"""Creates per transaction at most (ZooKeeper refuses a request over ``jute.maxbuffer``)."""
MAX_BYTES = 512 * 1024
"""Bytes of node data per transaction at most (half of ZooKeeper's default 1 MiB limit)."""


@dataclass(frozen=True)
class Create:
    """One znode to create (persistent, not sequential)."""

    path: str
    data: bytes

    @property
    def ops(self) -> int:
        return 1


@dataclass(frozen=True)
class Absent:
    """A znode that must not exist for the writer's creates to apply: created and deleted
    again in the same transaction (ZooKeeper has a check for a version, none for absence),
    so it fails with NodeExistsError if the node exists, and leaves nothing behind if not.
    Put it first: the first operation that fails is the one reported."""

    path: str
    data: bytes = b""

    @property
    def ops(self) -> int:
        return 2


Op = Create | Absent


@dataclass
class _Writer:
    fence: Fence
    creates: Sequence[Op]
    woken: threading.Event = field(default_factory=threading.Event)
    """Set once answered, or once handed the committer's role."""
    answered: bool = False
    error: StewardError | None = None
    leads: bool = False

    @property
    def size(self) -> int:
        return sum(len(c.data) + len(c.path) * c.ops for c in self.creates)

    @property
    def ops(self) -> int:
        return sum(c.ops for c in self.creates)


class GroupCommit:
    """Fenced creates, batched with those of concurrent callers.

    >>> commits = GroupCommit()
    >>> commits.create(fence, [Create(path, data)])  # returns once applied, or raises
    """

    def __init__(self, max_ops: int = MAX_OPS, max_bytes: int = MAX_BYTES) -> None:
        self._max_ops = max_ops
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._queue: list[_Writer] = []
        self._committing = False

    def create(self, fence: Fence, creates: Sequence[Op]) -> None:
        """Create every znode of ``creates`` in one fenced transaction, or none (none either
        if a node named :class:`Absent` exists).

        Raises what :meth:`FencedTransaction.commit` raises for these creates: FencedError,
        NodeExistsError (and the other errors of one operation), or ZooKeeperUnavailableError.
        """
        writer = _Writer(fence, creates)
        with self._lock:
            self._queue.append(writer)
            writer.leads = not self._committing
            self._committing = True
        if not writer.leads:
            writer.woken.wait()  # bounded: each commit waits at most its fence's timeout
        if not writer.answered:
            self._lead(writer)
        if writer.error is not None:
            raise writer.error

    def _lead(self, writer: _Writer) -> None:
        """Commit what is queued until ``writer``'s own creates are answered, then hand the
        committer's role to the first writer still queued (so no one commits for ever)."""
        try:
            while not writer.answered:
                with self._lock:
                    batch = self._take_batch()
                self._commit(batch)
        finally:
            with self._lock:
                if self._queue:
                    successor = self._queue[0]
                    successor.leads = True
                    successor.woken.set()
                else:
                    self._committing = False

    def _take_batch(self) -> list[_Writer]:
        """The queue's first writers that fit one transaction (the first always does)."""
        first = self._queue[0]
        batch: list[_Writer] = []
        ops = size = 0
        for writer in self._queue:
            if writer.fence != first.fence:
                break
            if batch and (ops + writer.ops > self._max_ops or size + writer.size > self._max_bytes):
                break
            batch.append(writer)
            ops += writer.ops
            size += writer.size
        del self._queue[: len(batch)]
        return batch

    def _commit(self, batch: list[_Writer]) -> None:
        """Commit ``batch``; a writer whose create failed is answered and left out, the rest
        committed again, until every writer of the batch has its answer."""
        pending = batch
        while pending:
            try:
                failed = self._commit_once(pending)
            except StewardError as exc:
                for writer in pending:
                    self._answer(writer, exc)
                return
            except BaseException:
                for writer in pending:  # a bug must not leave writers waiting for ever
                    self._answer(writer, StoreError("group commit failed; see the log"))
                raise
            if failed is None:
                for writer in pending:
                    self._answer(writer, None)
                return
            writer, error = failed
            self._answer(writer, error)
            pending = [w for w in pending if w is not writer]

    def _commit_once(self, batch: list[_Writer]) -> tuple[_Writer, StewardError] | None:
        transaction = batch[0].fence.transaction()
        owners: list[_Writer] = []
        for writer in batch:
            for create in writer.creates:
                transaction.create(create.path, create.data)
                if isinstance(create, Absent):
                    transaction.delete(create.path)
                owners.extend([writer] * create.ops)
        _results, failure = transaction.commit_or_failure()
        if failure is None:
            return None
        return owners[failure.index], failure.error

    @staticmethod
    def _answer(writer: _Writer, error: StewardError | None) -> None:
        writer.error = error
        writer.answered = True
        writer.woken.set()
