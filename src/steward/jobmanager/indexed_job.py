"""One job as the index holds it (:mod:`.job_index`): what a listing shows, built from a
job's view, its status record, its result or an event, and written out as a
:class:`~steward.wire.rest.JobView`'s JSON without pydantic.

An entry is small on purpose (a million results): its latest attempt without a cause, its
reason cut at :data:`MAX_REASON`, names interned and equal label sets shared.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol

from steward.wire.events import JobEvent
from steward.wire.job_options import deadline
from steward.wire.records import AttemptRecord, JobResultEntry, JobStatusRecord
from steward.wire.redaction import DEFAULT as SECRETS
from steward.wire.rest import JobView
from steward.wire.states import AttemptState, JobState

from .team_keys import Key

MAX_REASON = 500


class _Unshown(enum.Enum):
    """No reason given: :meth:`IndexedJob.of_status` redacts the record's own."""

    UNSHOWN = "unshown"


UNSHOWN: Final = _Unshown.UNSHOWN


class _Described(Protocol):
    """What a :class:`JobView`, a :class:`JobStatusRecord` and a :class:`JobResultEntry` name
    alike."""

    @property
    def job_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def submitted_at(self) -> float | None: ...
    @property
    def attempt_count(self) -> int: ...
    @property
    def failures(self) -> int: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def submitter(self) -> str | None: ...
    @property
    def attempts(self) -> Sequence[AttemptRecord]: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def team(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class LatestAttempt:
    """Where and how the job's latest attempt ran, without its cause (a fifth of the memory of
    an :class:`AttemptRecord`)."""

    number: int
    taskmanager: str
    epoch: int
    state: AttemptState
    started_at: float | None
    ended_at: float | None

    @classmethod
    def of(cls, attempt: AttemptRecord) -> LatestAttempt:
        return cls(
            attempt.number,
            sys.intern(attempt.taskmanager),
            attempt.epoch,
            attempt.state,
            attempt.started_at,
            attempt.ended_at,
        )

    def document(self) -> dict[str, object]:
        """The attempt as an :class:`AttemptRecord`'s JSON (its cause left out)."""
        return {
            "number": self.number,
            "taskmanager": self.taskmanager,
            "epoch": self.epoch,
            "state": self.state.value,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "cause": None,
            "adopted_by": [],
            "spark_app": None,
        }


@dataclass(frozen=True, slots=True)
class IndexedJob:
    """What a listing shows of a job."""

    job_id: str
    name: str
    state: JobState
    submitted_at: float
    updated_at: float | None
    reason: str | None
    attempt_count: int
    failures: int
    labels: dict[str, str]
    submitter: str | None
    latest_attempt: LatestAttempt | None
    timeout: float | None = None
    team: str | None = None

    @property
    def key(self) -> Key:
        return (self.submitted_at, self.job_id)

    @classmethod
    def of(cls, view: JobView) -> IndexedJob:
        return cls._described(view, view.state, view.updated_at, view.reason)

    @classmethod
    def of_status(
        cls, record: JobStatusRecord, *, shown_reason: str | _Unshown | None = UNSHOWN
    ) -> IndexedJob:
        """What :meth:`of` makes of the record's view (``reads.status_view``), built without
        one: the leader indexes every record it writes. ``shown_reason``: the record's reason
        already redacted (the caller's event shows the same)."""
        reason = shown_reason
        if reason is UNSHOWN:
            reason = None if record.reason is None else SECRETS.text(record.reason)
        return cls._described(record, record.state, record.updated_at, reason)

    @classmethod
    def of_result(cls, entry: JobResultEntry) -> IndexedJob:
        """What :meth:`of` makes of the result's view (``reads.result_view``)."""
        reason = SECRETS.text(entry.error.message) if entry.error else None
        return cls._described(entry, JobState.of(entry.state), entry.finished_at, reason)

    @classmethod
    def _described(
        cls, job: _Described, state: JobState, updated_at: float | None, reason: str | None
    ) -> IndexedJob:
        """The fields a view, a status record and a result name alike, taken in one place (a
        field added to the index is then added to all three at once)."""
        return cls(
            job_id=job.job_id,
            name=sys.intern(job.name),
            state=state,
            submitted_at=job.submitted_at or 0.0,
            updated_at=updated_at,
            reason=_cut(reason),
            attempt_count=job.attempt_count,
            failures=job.failures,
            labels=_shared(job.labels),
            submitter=None if job.submitter is None else sys.intern(job.submitter),
            latest_attempt=LatestAttempt.of(job.attempts[-1]) if job.attempts else None,
            timeout=job.timeout,
            team=None if job.team is None else sys.intern(job.team),
        )

    def changed_by(self, event: JobEvent) -> IndexedJob:
        """This job after ``event`` (a change of state within the same attempt)."""
        return replace(
            self,
            state=event.state,
            reason=_cut(event.reason),
            updated_at=event.at,
            name=event.name or self.name,
        )

    def document(self, served_by: str) -> dict[str, object]:
        """The job as a :class:`JobView`'s JSON, built without pydantic: a page of 1,000
        costs a third of the time (tests/unit/jobmanager/test_job_index.py checks that both
        are the same document)."""
        return {
            "job_id": self.job_id,
            "name": self.name,
            "state": self.state.value,
            "reason": self.reason,
            "submitted_at": self.submitted_at or None,
            "updated_at": self.updated_at,
            "attempts": [self.latest_attempt.document()] if self.latest_attempt else [],
            "attempt_count": self.attempt_count,
            "failures": self.failures,
            "labels": self.labels,
            "checkpoints": [],
            "progress": None,
            "result": None,
            "submitter": self.submitter,
            "team": self.team,
            "timeout": self.timeout,
            "deadline": deadline(self.submitted_at or None, self.timeout),
            "env": None,
            # A listing leaves out what only a job's own view shows (as env).
            "queue": None,
            "priority": None,
            "proxy_user": None,
            "served_by": served_by,
        }

    def view(self, served_by: str) -> JobView:
        return JobView.model_validate(self.document(served_by))


_LABEL_SETS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
MAX_LABEL_SETS = 10_000


def _shared(labels: dict[str, str]) -> dict[str, str]:
    """One dict for every job with the same labels (jobs of one pipeline share them): a dict
    costs more than the rest of an entry. Never changed once indexed."""
    key = tuple(sorted(labels.items()))
    shared = _LABEL_SETS.get(key)
    if shared is not None:
        return shared
    if len(_LABEL_SETS) < MAX_LABEL_SETS:
        _LABEL_SETS[key] = labels
    return labels


def _cut(reason: str | None) -> str | None:
    if reason is None or len(reason) <= MAX_REASON:
        return reason
    return reason[: MAX_REASON - 1] + "…"
