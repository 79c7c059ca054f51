"""Execution leases (rule 3): the ephemeral ``executions/<job-id>`` znodes.

A TaskManager may start an attempt only after it created the job's lease, in one multi-op that
first checks the epoch of the leader that asked (the same ``check(leader/epoch, version=epoch)``
a leader's own writes make). The znode is ephemeral and owned by the TaskManager's session: at
most one attempt of a job can hold it, and it vanishes when that session ends.

This module owns creating, reading and deleting leases, and the newest leader epoch this
TaskManager has seen (commands from older leaders are refused without asking ZooKeeper).

An ended attempt's lease goes together with its outcome record (:meth:`release_recording`,
one multi-op): from the moment the lease is gone the outcome is in ZooKeeper, so a
TaskManager that dies before its report reaches a leader loses nothing (see
:mod:`steward.store.outcomes`).
"""

from __future__ import annotations

import enum
import logging
import threading
from typing import Any

from kazoo.exceptions import BadVersionError, RolledBackError
from kazoo.exceptions import NodeExistsError as KazooNodeExists
from kazoo.exceptions import NoNodeError as KazooNoNode

from steward.errors import CorruptStateError, FencedError, NodeExistsError, StewardError, StoreError
from steward.ha.fencing import Fence
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import Session
from steward.store.outcomes import encode
from steward.store.zk import job_children, read, read_batched
from steward.wire.heartbeat import OutcomeRecord
from steward.wire.records import ExecutionLease
from steward.wire.runner_protocol import FinalEvent

log = logging.getLogger(__name__)


class LeaseHeldError(StoreError):
    """The job's execution lease is already held, by this or another TaskManager.

    ``holder`` is the current holder's lease, or None if it could not be read (it vanished in
    the meantime, or its payload is corrupt).
    """

    def __init__(self, job_id: str, holder: ExecutionLease | None) -> None:
        who = (
            f"taskmanager {holder.taskmanager} attempt {holder.attempt} epoch {holder.epoch}"
            if holder
            else "an unreadable holder"
        )
        super().__init__(f"the execution lease of job {job_id!r} is held by {who}")
        self.job_id = job_id
        self.holder = holder


class Released(enum.Enum):
    """What :meth:`ExecutionLeases.release_recording` did."""

    NOT_OURS = "not-ours"
    """Nothing: the lease was gone already, or is another session's or attempt's."""
    RELEASED = "released"
    """The lease is deleted; no outcome record was made (the job's node is gone)."""
    RECORDED = "recorded"
    """The lease is deleted and the outcome record created, in one multi-op."""


class ExecutionLeases:
    """The execution leases as seen by TaskManager ``tm_id`` on ``session``."""

    def __init__(self, session: Session, tm_id: str) -> None:
        self._session = session
        self._layout = session.layout
        self.tm_id = tm_id
        self._lock = threading.Lock()
        self._newest_epoch = 0

    # ------------------------------------------------------------------ epochs

    @property
    def newest_epoch(self) -> int:
        """The newest leader epoch this TaskManager has seen (0: none yet)."""
        return self._newest_epoch

    def observe_epoch(self, epoch: int) -> bool:
        """Record ``epoch`` from a leader's command; False if an newer leader was already seen.

        A command from an older epoch comes from a deposed leader: the caller must ignore it.
        """
        with self._lock:
            if epoch < self._newest_epoch:
                log.warning(
                    "refusing command of a stale leader epoch=%d newest_epoch=%d tm=%s",
                    epoch,
                    self._newest_epoch,
                    self.tm_id,
                )
                return False
            self._newest_epoch = epoch
            return True

    # ------------------------------------------------------------------ writes

    def acquire(self, job_id: str, attempt: int, epoch: int) -> ExecutionLease:
        """Create the lease of ``job_id`` for ``attempt``, fenced by the leader's ``epoch``.

        Raises :class:`FencedError` if ``epoch`` is not the current leader epoch (nothing is
        created), :class:`LeaseHeldError` if any attempt already holds the lease.
        """
        if not self.observe_epoch(epoch):
            raise FencedError(
                f"epoch {epoch} is older than epoch {self._newest_epoch} already seen;"
                f" not starting job {job_id!r} attempt {attempt}",
                epoch=epoch,
            )
        lease = ExecutionLease(taskmanager=self.tm_id, attempt=attempt, epoch=epoch)
        path = self._layout.execution(job_id)
        fence = Fence(
            self._session.client, self._layout.leader_epoch, epoch, self._session.session_timeout
        )
        try:
            fence.transaction().create(path, lease.to_json(), ephemeral=True).commit()
        except NodeExistsError as exc:
            holder = self._holder_or_none(job_id)
            log.info(
                "lease already held job=%s attempt=%d epoch=%d holder=%s",
                job_id,
                attempt,
                epoch,
                holder,
            )
            raise LeaseHeldError(job_id, holder) from exc
        log.info(
            "lease acquired job=%s attempt=%d epoch=%d tm=%s", job_id, attempt, epoch, self.tm_id
        )
        return lease

    def release(self, job_id: str, attempt: int) -> bool:
        """Delete the lease of ``job_id`` if this session holds it for ``attempt``.

        Returns False, and deletes nothing, if the lease is gone or belongs to someone else
        (another session, another attempt): never delete a lease that is not ours.
        """
        return self._release(job_id, attempt, None) is not Released.NOT_OURS

    def release_recording(self, job_id: str, attempt: int, outcome: FinalEvent) -> Released:
        """Like :meth:`release`, creating the attempt's outcome record in the same multi-op.

        If the record cannot be made (the job's node is gone: the job is cleaned up, no leader
        needs it), the lease is released alone.
        """
        return self._release(job_id, attempt, outcome)

    def _release(self, job_id: str, attempt: int, outcome: FinalEvent | None) -> Released:
        path = self._layout.execution(job_id)
        found = read(self._session.client, path)
        if found is None:
            log.info("lease already gone job=%s attempt=%d", job_id, attempt)
            return Released.NOT_OURS
        data, stat = found
        lease = self._ours(data, stat.ephemeralOwner, attempt)
        if lease is None:
            log.warning("not releasing a lease that is not ours job=%s attempt=%d", job_id, attempt)
            return Released.NOT_OURS
        released = Released.RELEASED
        if outcome is not None:
            record = OutcomeRecord(
                job_id=job_id,
                attempt=attempt,
                taskmanager=self.tm_id,
                epoch=lease.epoch,
                outcome=outcome,
            )
            released = self._delete_recording(path, stat.version, record)
        if released is Released.RELEASED:
            released = self._delete(path, stat.version)
        if released is not Released.NOT_OURS:
            log.info(
                "lease released job=%s attempt=%d tm=%s outcome_recorded=%s",
                job_id,
                attempt,
                self.tm_id,
                released is Released.RECORDED,
            )
        return released

    def drop_outcome(self, job_id: str, attempt: int) -> None:
        """Delete the outcome record of ``attempt`` (the leader has acknowledged the outcome,
        so the job's status or result holds it); a record already gone is no error."""
        path = self._layout.attempt_outcome(job_id, attempt)
        try:
            self._session.client.delete(path)
        except KazooNoNode:
            return
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        log.info("outcome record dropped job=%s attempt=%d tm=%s", job_id, attempt, self.tm_id)

    def _delete(self, path: str, version: int) -> Released:
        try:
            # Version-checked: if the znode was replaced since we read it, it is not ours.
            self._session.client.delete(path, version=version)
        except (KazooNoNode, BadVersionError):
            log.warning("lease changed while releasing path=%s", path)
            return Released.NOT_OURS
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        return Released.RELEASED

    def _delete_recording(self, path: str, version: int, record: OutcomeRecord) -> Released:
        """The version-checked delete and the record's create, in one multi-op; RELEASED
        means "not done, delete alone" (the record's parent is gone, or it exists already)."""
        record_path = self._layout.attempt_outcome(record.job_id, record.attempt)
        txn = self._session.client.transaction()
        txn.delete(path, version=version)
        txn.create(record_path, encode(record))
        try:
            results: list[Any] = txn.commit_async().get(timeout=self._session.session_timeout)
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        lease_result, record_result = results
        if isinstance(lease_result, KazooNoNode | BadVersionError):
            log.warning("lease changed while releasing path=%s", path)
            return Released.NOT_OURS
        if isinstance(record_result, KazooNoNode | KazooNodeExists):
            log.info("outcome not recorded path=%s cause=%r", record_path, record_result)
            return Released.RELEASED
        for result in (lease_result, record_result):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise translate(result, path) from result
        return Released.RECORDED

    def _ours(self, data: bytes, owner: int, attempt: int) -> ExecutionLease | None:
        if owner != self._session.session_id:
            return None
        try:
            lease = ExecutionLease.from_json(data)
        except StewardError:
            return None
        return lease if lease.taskmanager == self.tm_id and lease.attempt == attempt else None

    # ------------------------------------------------------------------ reads

    def held(self, job_id: str) -> ExecutionLease | None:
        """The lease of ``job_id`` (whoever holds it), or None if no attempt holds it.

        Raises :class:`CorruptStateError` if the znode exists but its payload is not a lease.
        """
        found = read(self._session.client, self._layout.execution(job_id))
        return ExecutionLease.from_json(found[0]) if found else None

    def all(self) -> dict[str, ExecutionLease]:
        """Every readable lease of the cluster, by job id; corrupt ones are logged and left out.

        One listing and pipelined reads (:func:`~steward.store.zk.read_batched`): a new
        leader reads 10,000 leases in about ten round trips, not 10,000."""
        client, layout = self._session.client, self._session.layout
        job_ids = job_children(client, layout.executions)
        paths = [layout.execution(job_id) for job_id in job_ids]
        leases: dict[str, ExecutionLease] = {}
        for job_id, found in zip(job_ids, read_batched(client, paths), strict=True):
            lease = None if found is None else _decoded_quietly(job_id, found[0])
            if lease is not None:
                leases[job_id] = lease
        return leases

    def _holder_or_none(self, job_id: str) -> ExecutionLease | None:
        # Only to name the holder in an error: the error itself matters more than the name.
        try:
            return self.held(job_id)
        except StewardError as exc:
            log.warning("could not read the lease holder job=%s cause=%r", job_id, exc)
            return None


def _decoded_quietly(job_id: str, data: bytes) -> ExecutionLease | None:
    try:
        return ExecutionLease.from_json(data)
    except CorruptStateError as exc:
        log.warning("corrupt lease job=%s cause=%r", job_id, exc)
        return None
