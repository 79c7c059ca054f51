"""Attempts' outcome records, ``jobs/<job-id>/outcome-<attempt>`` (see :class:`OutcomeRecord`).

A TaskManager creates one in the multi-op that deletes an ended attempt's lease
(:mod:`steward.store.leases`); the leader reads one before it counts an attempt LOST,
and removes it (fenced) once the outcome is in the job's status or result. The job's cleanup
removes whatever is left with the job's node (:meth:`CompletedCheckpointStore.remove_all`).

Records live under the job's node on purpose: a TaskManager's create fails once the job is
cleaned up (no parent), so a late record can never outlive its job.

An outcome is at most :data:`MAX_RECORD_BYTES` encoded, the result store's own limit: a value
too large for the record is too large for the job's result too, so the record then says so
(``steward.ResultTooLarge``), as the result would.
"""

from __future__ import annotations

import logging

from steward.errors import CorruptStateError, NoNodeError
from steward.ha.fencing import Fence
from steward.ha.layout import OUTCOME_PREFIX
from steward.ha.session import Session
from steward.store import zk
from steward.store.results import MAX_ENTRY_BYTES
from steward.wire.heartbeat import OutcomeRecord
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent

log = logging.getLogger(__name__)

MAX_RECORD_BYTES = MAX_ENTRY_BYTES
TOO_LARGE_ERROR = "steward.ResultTooLarge"


def encode(record: OutcomeRecord) -> bytes:
    """The record's bytes, at most :data:`MAX_RECORD_BYTES` (a too large value is replaced by
    the failure the result store would record for it)."""
    data = record.to_json()
    if len(data) <= MAX_RECORD_BYTES:
        return data
    error = ErrorInfo(
        type=TOO_LARGE_ERROR,
        message=f"the result of attempt {record.attempt} is {len(data)} bytes encoded; the"
        f" limit is {MAX_RECORD_BYTES} (return a path to large outputs instead)",
    )
    smaller = record.model_copy(update={"outcome": FailedEvent(error=error, at=record.outcome.at)})
    return smaller.to_json()


def is_outcome_name(name: str) -> bool:
    return name.startswith(OUTCOME_PREFIX)


class AttemptOutcomes:
    """Read and (fenced) remove the outcome records of one cluster."""

    def __init__(self, session: Session) -> None:
        self._client = session.client
        self._layout = session.layout

    def find(self, job_id: str, attempt: int) -> OutcomeRecord | None:
        """The record of ``attempt``, or None if there is none or it cannot be read."""
        found = zk.read(self._client, self._layout.attempt_outcome(job_id, attempt))
        if found is None:
            return None
        try:
            record = OutcomeRecord.from_json(found[0])
        except CorruptStateError as exc:
            log.warning("unreadable outcome record job=%s attempt=%d: %s", job_id, attempt, exc)
            return None
        if (record.job_id, record.attempt) != (job_id, attempt):
            log.warning("outcome record of another attempt job=%s attempt=%d", job_id, attempt)
            return None
        return record

    def remove(self, fence: Fence, job_id: str, attempt: int) -> None:
        """Delete the record of ``attempt`` if there is one; raises FencedError if deposed."""
        path = self._layout.attempt_outcome(job_id, attempt)
        if zk.read(self._client, path) is None:
            return
        try:
            fence.transaction().delete(path).commit()
        except NoNodeError:
            return
