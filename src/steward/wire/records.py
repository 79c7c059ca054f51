"""What Steward persists in ZooKeeper and the stores: leadership and membership, results,
attempts, checkpoints, execution leases and outcome records, and a job's status.

The leader keeps each live job's status in ``jobs/<job-id>/status`` (a :class:`JobStatusRecord`,
written through the leader's fence on every transition). That is what lets a standby answer
``GET /v1/jobs`` without asking the leader, and a new leader continue a job's attempt numbers
and restart budget where the old one stopped. Once a job is globally terminal its status is
removed with the rest of its HA data and the JobResultStore answers for it.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import (
    Field,
)

from steward.wire.states import AttemptState, CleanupStatus, JobState, TerminalState
from steward.wire.values import JsonValue, Payload, Value


class LeaderInfo(Payload):
    """``leader/info``: who leads, where to reach it, and under which epoch."""

    kind_name: ClassVar[str] = "leader info"
    contender: str
    address: str
    epoch: int = Field(ge=1)


class LeadershipTerm(Value):
    """One term of leadership, as its leader recorded it once it had recovered."""

    epoch: int = Field(ge=1)
    contender: str
    address: str
    granted_at: float = Field(description="wall-clock time (Unix seconds) of the grant")
    ready_at: float = Field(description="when its recovery was done and it answered writes")
    jobs: int = Field(default=0, ge=0, description="live jobs it recovered")
    adopted: int = Field(default=0, ge=0, description="running attempts it adopted (rule 8)")


class LeadershipHistory(Payload):
    """``leader/history``: the latest terms of leadership, oldest first, bounded; fenced."""

    kind_name: ClassVar[str] = "leadership history"
    terms: list[LeadershipTerm] = Field(default_factory=list)


class ContenderInfo(Payload):
    """Data of a ``leader/latch/<seq>`` node: who contends."""

    kind_name: ClassVar[str] = "contender"
    contender: str
    address: str


class ErrorInfo(Value):
    """Why a job failed: the exception type, its message and the traceback if there is one."""

    type: str
    message: str
    traceback: str | None = None
    permanent: bool = Field(
        default=False,
        description="retrying cannot fix it (the code does not parse, the entrypoint is"
        " missing, the environment cannot be built): the job fails without a restart",
    )


class SparkApp(Value):
    """The Spark application an attempt drives: its id, its UI, its master."""

    app_id: str = Field(min_length=1, max_length=256)
    ui_url: str | None = Field(default=None, max_length=2048)
    master: str = Field(default="", max_length=2048)
    history_url: str | None = Field(
        default=None,
        max_length=2048,
        description="the run in the Spark History Server (history.server.*), when there is one",
    )


class AttemptRecord(Value):
    """One run of a job: where, under which leader epoch, when, and how it ended."""

    number: int = Field(ge=1)
    taskmanager: str
    epoch: int = Field(ge=1)
    state: AttemptState
    started_at: float | None = None
    ended_at: float | None = None
    cause: ErrorInfo | None = None
    adopted_by: list[int] = Field(
        default_factory=list, description="epochs of leaders that adopted the running attempt"
    )
    spark_app: SparkApp | None = None


class JobResultEntry(Payload):
    """``results/<job-id>``: the outcome of a globally terminal job. Outlives the job."""

    kind_name: ClassVar[str] = "job result"
    job_id: str
    state: TerminalState
    status: CleanupStatus = CleanupStatus.DIRTY
    value: JsonValue = None
    error: ErrorInfo | None = None
    submitted_at: float | None = None
    finished_at: float
    cleaned_at: float | None = None
    name: str = ""
    attempts: list[AttemptRecord] = Field(
        default_factory=list,
        description="the last attempts, their causes without tracebacks (the error has it)",
    )
    attempt_count: int = Field(default=0, ge=0, description="attempts ever made (>= the list)")
    failures: int = Field(
        default=0, ge=0, description="failed attempts (0 in results recorded before it was kept)"
    )
    labels: dict[str, str] = Field(default_factory=dict, description="the job's labels")
    epoch: int = Field(ge=1)
    submitter: str | None = None
    """Who submitted the job (None: recorded before authentication)."""
    team: str | None = None
    """The team that owns the job (None: recorded before teams, the default team)."""
    queue: str | None = None
    """The queue the job waits in for slots (None: recorded before queues)."""
    priority: int | None = None
    """Its priority within the queue (None: recorded before queues)."""
    proxy_user: str | None = None
    """The OS user its driver runs as (None: the TaskManager's own)."""
    timeout: float | None = Field(default=None, description="the job's timeout (seconds)")
    env: dict[str, str] = Field(
        default_factory=dict, description="the job's environment variables, as shown (redacted)"
    )
    submission_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The sha256 of the body that submitted the job (None: recorded before it was kept, or a
    job failed in recovery): a submission of its id with another body is refused as one of a
    live job is. In the body, not the index: no ZooKeeper byte is spent on it."""


class JobResultIndex(Payload):
    """``results/<job-id>`` since results moved to blob storage: the small fenced index of a
    result whose body (a :class:`JobResultEntry`) is the blob ``results/<job-id>/<sha256>``.

    Kept under 200 bytes a job (rule 7): what recovery and retention decide on (state, cleanup
    status, finish time) and the body's checksum, which also names its blob. An entry written
    before (the whole :class:`JobResultEntry` in the node) has no ``sha256``: that is how the
    two are told apart while the leader migrates them.
    """

    kind_name: ClassVar[str] = "job result index"
    state: TerminalState
    status: CleanupStatus = CleanupStatus.DIRTY
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="the body's, and its blob's name")
    finished_at: float


class CheckpointPointer(Payload):
    """``jobs/<job-id>/checkpoints/<%019d>``: where a completed checkpoint's metadata is."""

    kind_name: ClassVar[str] = "checkpoint pointer"
    checkpoint_id: int = Field(ge=1)
    blob: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    epoch: int = Field(ge=1)


class CompletedCheckpoint(Payload):
    """A checkpoint's metadata blob: a streaming micro-batch or a materialised batch stage."""

    kind_name: ClassVar[str] = "checkpoint"
    job_id: str
    checkpoint_id: int = Field(ge=1)
    attempt: int = Field(ge=0)
    created_at: float
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class ExecutionLease(Payload):
    """``executions/<job-id>``: the one attempt of a job allowed to run (rule 3)."""

    kind_name: ClassVar[str] = "execution lease"
    taskmanager: str
    attempt: int = Field(ge=0)
    epoch: int = Field(ge=1)


class TaskManagerInfo(Payload):
    """``taskmanagers/<tm-id>``: a live TaskManager, where to reach it and its slots."""

    kind_name: ClassVar[str] = "task manager"
    address: str
    slots: int = Field(ge=0)
    http_address: str | None = Field(
        default=None,
        description="its HTTP port's URL (attempts' logs); None: written by a version without one",
    )


MAX_ATTEMPTS_KEPT = 20


"""A status record keeps this many most recent attempts (older ones are only counted)."""

MAX_EARLIER_APPS = MAX_ATTEMPTS_KEPT
"""A start names at most this many earlier attempts' Spark applications (the ones recorded)."""


MAX_CAUSE_TRACEBACK = 8 * 1024


"""Tracebacks in a status record are cut to this many characters (the result keeps it all)."""


class JobStatusRecord(Payload):
    """``jobs/<job-id>/status``: the job's state and its recent attempts, fenced."""

    kind_name: ClassVar[str] = "job status"
    compact: ClassVar[bool] = True
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
    submitter: str | None = None
    """Who submitted the job (None: recorded before authentication)."""
    team: str | None = None
    """The team that owns the job (None: recorded before teams, the default team)."""
    queue: str | None = None
    """The queue the job waits in for slots (None: recorded before queues)."""
    priority: int | None = None
    """Its priority within the queue (None: recorded before queues)."""
    proxy_user: str | None = None
    """The OS user its driver runs as (None: the TaskManager's own)."""
    labels: dict[str, str] = Field(default_factory=dict, description="the job's labels")
    timeout: float | None = Field(default=None, description="the job's timeout (seconds)")
    timed_out: bool = Field(
        default=False, description="CANCELLING because the timeout passed (reason TIMEOUT)"
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="the job's environment variables as shown (redacted): no secret is kept"
        " in ZooKeeper",
    )
    slots: int | None = Field(
        default=None,
        ge=1,
        description="the job's slots: with ``queue``, what a new leader needs to adopt its"
        " running attempt without reading the job graph (None: written before they were kept)",
    )
    max_concurrent: int | None = Field(
        default=None, ge=1, description="the spec's ``max_concurrent`` (None: no limit)"
    )
    hookless: bool | None = Field(
        default=None,
        description="its pipeline cannot define ``initialize``: with the other facts, what a"
        " new leader needs to schedule the job without reading its graph (None: not known)",
    )


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
