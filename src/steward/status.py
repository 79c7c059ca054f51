"""A job's state and attempts: what the leader persists, and what the REST API shows.

The leader keeps each live job's status in ``jobs/<job-id>/status`` (a :class:`JobStatusRecord`,
written through the leader's fence on every transition). That is what lets a standby answer
``GET /v1/jobs`` without asking the leader, and a new leader continue a job's attempt numbers
and restart budget where the old one stopped. Once a job is globally terminal its status is
removed with the rest of its HA data and the JobResultStore answers for it.

The REST views (:class:`JobView`, :class:`ClusterView`, ...) are the JSON documents of the API;
:mod:`steward.client` decodes them with the same classes.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from pydantic import Field

# Attempts are defined with the result entry that also keeps them; re-exported from here.
from steward.model import AttemptRecord as AttemptRecord  # noqa: PLC0414 (re-export)
from steward.model import AttemptState as AttemptState  # noqa: PLC0414 (re-export)
from steward.model import (
    ErrorInfo,
    JobResultEntry,
    JsonValue,
    Payload,
    TerminalState,
    Value,
)

MAX_ATTEMPTS_KEPT = 20
"""A status record keeps this many most recent attempts (older ones are only counted)."""

MAX_CAUSE_TRACEBACK = 8 * 1024
"""Tracebacks in a status record are cut to this many characters (the result keeps it all)."""


class JobState(enum.StrEnum):
    SUBMITTED = "SUBMITTED"
    INITIALIZING = "INITIALIZING"
    SCHEDULED = "SCHEDULED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    CANCELLING = "CANCELLING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    @classmethod
    def of(cls, terminal: TerminalState) -> JobState:
        return cls(terminal.value)


_TERMINAL = frozenset({JobState.FINISHED, JobState.FAILED, JobState.CANCELED})


class JobStatusRecord(Payload):
    """``jobs/<job-id>/status``: the job's state and its recent attempts, fenced."""

    kind_name: ClassVar[str] = "job status"
    job_id: str
    name: str = ""
    state: JobState
    reason: str | None = None
    submitted_at: float
    updated_at: float
    attempts: list[AttemptRecord] = Field(default_factory=list)
    attempt_count: int = Field(default=0, ge=0, description="attempts ever made (>= the list)")
    failures: int = Field(default=0, ge=0, description="failed attempts: spends restarts")
    restart_at: float | None = Field(
        default=None,
        description="RESTARTING: the wall-clock time (Unix seconds) before which no new"
        " attempt starts, so that a new leader keeps the restart strategy's delay",
    )
    epoch: int = Field(ge=1, description="epoch of the leader that wrote this record")


RESULT_ATTEMPTS_KEPT = 5
"""A job's result keeps this many of its last attempts, to show where and how it ran."""


def attempts_to_keep(attempts: list[AttemptRecord]) -> list[AttemptRecord]:
    """The last attempts for a job's result: small, since the result's value may be up to
    1 MiB and all of it lives in one znode (each cause without its traceback; the result's
    own error keeps the final one whole)."""
    return [
        attempt.model_copy(update={"cause": attempt.cause.model_copy(update={"traceback": None})})
        if attempt.cause is not None
        else attempt
        for attempt in attempts[-RESULT_ATTEMPTS_KEPT:]
    ]


def trim_cause(cause: ErrorInfo | None) -> ErrorInfo | None:
    """``cause`` with its traceback cut to :data:`MAX_CAUSE_TRACEBACK` (keeps the end)."""
    if cause is None or cause.traceback is None or len(cause.traceback) <= MAX_CAUSE_TRACEBACK:
        return cause
    tail = cause.traceback[-MAX_CAUSE_TRACEBACK:]
    return cause.model_copy(update={"traceback": f"... [cut] ...\n{tail}"})


# ---------------------------------------------------------------- REST views


class CheckpointView(Value):
    checkpoint_id: int
    created_at: float
    attempt: int
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class ResultView(Value):
    """``GET /v1/jobs/{id}/result``: a terminated job's outcome, from the JobResultStore."""

    job_id: str
    state: TerminalState
    value: JsonValue = None
    error: ErrorInfo | None = None
    submitted_at: float | None = None
    finished_at: float
    cleanup: str = Field(description="DIRTY while HA data is being removed, then CLEAN")

    @classmethod
    def of(cls, entry: JobResultEntry) -> ResultView:
        return cls(
            job_id=entry.job_id,
            state=entry.state,
            value=entry.value,
            error=entry.error,
            submitted_at=entry.submitted_at,
            finished_at=entry.finished_at,
            cleanup=entry.status.value,
        )


class JobView(Value):
    """``GET /v1/jobs/{id}``: a job as the API shows it, live or terminated."""

    job_id: str
    name: str = ""
    state: JobState
    reason: str | None = None
    submitted_at: float | None = None
    updated_at: float | None = None
    attempts: list[AttemptRecord] = Field(default_factory=list)
    attempt_count: int = 0
    failures: int = 0
    checkpoints: list[CheckpointView] = Field(default_factory=list)
    progress: dict[str, JsonValue] | None = None
    result: ResultView | None = None
    served_by: str = Field(default="", description="id of the JobManager that answered")


class JobList(Value):
    jobs: list[JobView]
    served_by: str = ""


class LeaderView(Value):
    id: str
    address: str
    epoch: int


class JobManagerView(Value):
    id: str
    address: str
    leader: bool


class TaskManagerView(Value):
    id: str
    address: str
    slots: int
    free_slots: int | None = Field(default=None, description="known to the leader only")
    attempts: list[str] = Field(default_factory=list, description="job ids running there")


class ClusterView(Value):
    """``GET /v1/cluster``."""

    cluster_id: str
    leader: LeaderView | None
    jobmanagers: list[JobManagerView]
    taskmanagers: list[TaskManagerView]
    served_by: str = ""


class ArtifactUpload(Value):
    """The pipeline's code in a submission: a ``.py`` file or a ``.zip`` of a folder."""

    filename: str = Field(min_length=1, max_length=255)
    data_b64: str


class SubmitRequest(Value):
    """``POST /v1/jobs``. ``spec`` is a JobSpec whose ``job_id`` may be left out (generated)."""

    spec: dict[str, JsonValue]
    artifact: ArtifactUpload
    options: dict[str, str] = Field(
        default_factory=dict,
        description="spark-submit's options by name ('driver-memory', or Livy's"
        " 'driverMemory'): each sets its Spark key, over spec.spark_conf's",
    )


class ErrorBody(Value):
    """Every error response: a machine-readable code and a sentence for humans."""

    code: str
    message: str
    result: ResultView | None = None
    leader: LeaderView | None = None
