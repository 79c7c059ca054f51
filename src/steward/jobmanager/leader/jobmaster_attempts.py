"""A :class:`~steward.jobmanager.leader.jobmaster.JobMaster`'s attempt records: the list its
status record persists, newest last, at most ``MAX_ATTEMPTS_KEPT`` long. Records are frozen
pydantic models, so every change here replaces a record in the list by its number; which
change happens when is the JobMaster's to decide."""

from __future__ import annotations

import time

from steward.wire.records import MAX_ATTEMPTS_KEPT, AttemptRecord, ErrorInfo, trim_cause
from steward.wire.states import AttemptState


def find(attempts: list[AttemptRecord], number: int) -> AttemptRecord | None:
    for record in reversed(attempts):
        if record.number == number:
            return record
    return None


def put(attempts: list[AttemptRecord], record: AttemptRecord) -> None:
    """Replace the record of ``record.number``, or append it if none is kept."""
    for index in range(len(attempts) - 1, -1, -1):
        if attempts[index].number == record.number:
            attempts[index] = record
            return
    append(attempts, record)


def append(attempts: list[AttemptRecord], record: AttemptRecord) -> None:
    attempts.append(record)
    del attempts[:-MAX_ATTEMPTS_KEPT]


def end(
    attempts: list[AttemptRecord],
    number: int,
    state: AttemptState,
    cause: ErrorInfo | None,
    at: float,
) -> None:
    """Attempt ``number`` ended in ``state`` at ``at`` (nothing if its record is not kept)."""
    record = find(attempts, number)
    if record is not None:
        put(
            attempts,
            record.model_copy(update={"state": state, "ended_at": at, "cause": trim_cause(cause)}),
        )


def adopt(
    attempts: list[AttemptRecord], taskmanager: str, number: int, lease_epoch: int, epoch: int
) -> None:
    """Attempt ``number`` runs on ``taskmanager``, adopted by the leader of ``epoch``."""
    existing = find(attempts, number)
    if existing is None:
        record = AttemptRecord(
            number=number,
            taskmanager=taskmanager,
            epoch=lease_epoch,
            state=AttemptState.RUNNING,
            started_at=None,
            adopted_by=[epoch],
        )
        append(attempts, record)  # made as adopted: no copy of it (a takeover adopts 10,000)
        return
    update = {
        "state": AttemptState.RUNNING,
        "taskmanager": taskmanager,
        "adopted_by": [*existing.adopted_by, epoch],
    }
    put(attempts, existing.model_copy(update=update))


def start(attempts: list[AttemptRecord], number: int, started_at: float | None) -> bool:
    """Attempt ``number`` is running; True if its record did not say so yet."""
    record = find(attempts, number)
    if record is None or (record.state is AttemptState.RUNNING and record.started_at):
        return False
    update = {"state": AttemptState.RUNNING, "started_at": started_at or time.time()}
    put(attempts, record.model_copy(update=update))
    return True
