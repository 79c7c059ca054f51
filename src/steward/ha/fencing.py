"""Fenced writes (rule 2): every ZooKeeper write a leader makes is one multi-op that
first checks that the epoch it was granted is still the current one.

The epoch is the version of the ``leader/epoch`` znode: each grant of leadership bumps it by
one with a compare-and-set, so ``check(leader/epoch, version=epoch)`` holds exactly while no
newer leader has been granted. A deposed leader, or one whose session is gone, gets a
:class:`FencedError` and nothing of its transaction is applied.

A write never waits for a lost connection to come back: kazoo queues a request made while
the connection is down until it reconnects, which can be a whole session timeout, and the
leader makes many writes under its lock. A write is refused at once while the connection is
not CONNECTED (nothing sent: definitely not applied) and given up after ``timeout`` once
sent (outcome unknown; every caller treats it as "retry later", which is safe because
creates answer NodeExists and overwrites are idempotent).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError
from kazoo.protocol.states import KazooState

from steward.errors import CoordinationError, FencedError, ZooKeeperUnavailableError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fence:
    """The right to write granted by one epoch of leadership."""

    client: KazooClient
    epoch_path: str
    epoch: int
    timeout: float = 10.0
    """How long a sent write may wait for its answer (the session timeout is a good value)."""

    def transaction(self) -> FencedTransaction:
        return FencedTransaction(self)

    def is_current(self) -> bool:
        """Whether ``leader/epoch`` is still at this fence's epoch (a read; may be stale)."""
        try:
            _data, stat = self.client.get_async(self.epoch_path).get(timeout=self.timeout)
        except KAZOO_ERRORS as exc:
            raise translate(exc, self.epoch_path) from exc
        return bool(stat.version == self.epoch)


@dataclass
class FencedTransaction:
    """Collects operations, then commits them atomically behind the epoch check."""

    fence: Fence
    _ops: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)

    def create(
        self, path: str, value: bytes, *, ephemeral: bool = False, sequence: bool = False
    ) -> FencedTransaction:
        self._ops.append(("create", path, (value, None, ephemeral, sequence)))
        return self

    def set_data(self, path: str, value: bytes, version: int = -1) -> FencedTransaction:
        self._ops.append(("set_data", path, (value, version)))
        return self

    def delete(self, path: str, version: int = -1) -> FencedTransaction:
        self._ops.append(("delete", path, (version,)))
        return self

    def check(self, path: str, version: int) -> FencedTransaction:
        self._ops.append(("check", path, (version,)))
        return self

    def __len__(self) -> int:
        return len(self._ops)

    def commit(self) -> list[Any]:
        """Apply every operation or none. Returns kazoo's result per operation (not the check).

        Raises :class:`FencedError` if the epoch is stale (nothing applied), or the translated
        error of the first operation that failed (nothing applied either).
        """
        results, failure = self.commit_or_failure()
        if failure is not None:
            raise failure.error from failure.error.__cause__
        return results

    def commit_or_failure(self) -> tuple[list[Any], OpFailure | None]:
        """Like :meth:`commit`, but an operation that failed is returned, with its index,
        instead of raised (nothing is applied then either): a group commit
        (:mod:`steward.store.group_commit`) must know whose operation it was.

        Raises :class:`FencedError`, or the error of a commit that got no answer.
        """
        fence = self.fence
        if fence.client.state != KazooState.CONNECTED:
            first = self._ops[0][1] if self._ops else fence.epoch_path
            raise ZooKeeperUnavailableError(
                f"not connected to ZooKeeper; the write of {first} was not sent"
            )
        txn = fence.client.transaction()
        txn.check(fence.epoch_path, fence.epoch)
        for op, path, args in self._ops:
            getattr(txn, op)(path, *args)
        try:
            results: list[Any] = txn.commit_async().get(timeout=fence.timeout)
        except KAZOO_ERRORS as exc:
            raise translate(exc, fence.epoch_path) from exc
        except RuntimeError as exc:
            # kazoo's connection thread broke on a protocol error ("xids do not match",
            # python-zk/kazoo#254) and handed it to the pending requests: the outcome is
            # unknown, as on a lost connection (the session's watchdog restarts the client).
            raise ZooKeeperUnavailableError(
                f"the ZooKeeper connection broke during the write ({exc})"
            ) from exc
        head = results[0]
        if isinstance(head, Exception) and not isinstance(head, RolledBackError):
            log.warning("fenced write rejected epoch=%s cause=%r", fence.epoch, head)
            raise FencedError(
                f"epoch {fence.epoch} is no longer the current leader epoch; write rejected",
                epoch=fence.epoch,
            ) from head
        for index, ((_op, path, _args), result) in enumerate(
            zip(self._ops, results[1:], strict=True)
        ):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                error = translate(result, path)
                error.__cause__ = result
                return [], OpFailure(index, error)
        return results[1:], None


@dataclass(frozen=True)
class OpFailure:
    """The operation of a fenced transaction that failed (so none was applied)."""

    index: int
    """Its position among the transaction's operations (the epoch check not counted)."""
    error: CoordinationError
