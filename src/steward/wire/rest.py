"""The REST API's bodies: the JSON documents a JobManager answers with and accepts.

:mod:`steward.client.client` decodes them with the same classes.
"""

from __future__ import annotations

from pydantic import (
    Field,
)

from steward.wire.records import AttemptRecord, ErrorInfo, JobResultEntry, LeadershipTerm
from steward.wire.redaction import redact_error
from steward.wire.states import JobState, TerminalState
from steward.wire.values import JsonValue, Value


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
            error=None if entry.error is None else redact_error(entry.error),
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
    labels: dict[str, str] = Field(default_factory=dict, description="the job's labels")
    checkpoints: list[CheckpointView] = Field(default_factory=list)
    progress: dict[str, JsonValue] | None = None
    result: ResultView | None = None
    submitter: str | None = Field(
        default=None, description="name of the token that submitted it (None: before auth)"
    )
    team: str | None = Field(
        default=None, description="the team that owns it (None: stored before teams: the default)"
    )
    queue: str | None = Field(
        default=None,
        description="the queue it waits in for slots (null: recorded before queues; in a listing)",
    )
    priority: int | None = Field(
        default=None,
        description="its priority within its queue (null: recorded before queues; in a listing)",
    )
    proxy_user: str | None = Field(
        default=None,
        description="the OS user its driver runs as (null: the TaskManager's; in a listing)",
    )
    timeout: float | None = Field(
        default=None, description="seconds the job may take from its submission (None: no limit)"
    )
    deadline: float | None = Field(
        default=None,
        description="submitted_at + timeout (Unix seconds): the leader cancels it then",
    )
    env: dict[str, str] | None = Field(
        default=None,
        description="its environment variables, secret values redacted; null in a listing",
    )
    served_by: str = Field(default="", description="id of the JobManager that answered")


class JobList(Value):
    """``GET /v1/jobs``: one page of jobs, newest first."""

    jobs: list[JobView]
    served_by: str = ""
    next: str | None = Field(
        default=None, description="cursor of the next (older) page; null on the last page"
    )
    counts: dict[str, int] = Field(
        default_factory=dict, description="every job known, by state, whatever the filters"
    )


MAX_PAGE = 1000
"""The largest ``limit`` of ``GET /v1/jobs``."""


class JobsQuery(Value):
    """``GET /v1/jobs``'s query; an unknown parameter or a bad value is a 400."""

    limit: int = Field(default=100, ge=1, le=MAX_PAGE, description="jobs per page")
    cursor: str | None = Field(
        default=None, max_length=1000, description="the ``next`` of the previous page"
    )
    state: JobState | None = None
    label: str | None = Field(
        default=None, max_length=600, pattern=r"^[^=]+=.*$", description="key=value"
    )
    name: str | None = Field(default=None, max_length=200, description="a prefix of the name")
    submitter: str | None = Field(default=None, max_length=200)
    team: str | None = Field(default=None, max_length=64, description="one team's jobs")


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
    http_address: str | None = Field(
        default=None, description="its HTTP port (attempts' logs), from its registration"
    )
    heartbeat_age: float | None = Field(
        default=None,
        description="seconds since its last heartbeat arrived (an idle TaskManager's climbs to"
        " heartbeat.idle-hold between polls); known to the leader only",
    )


class ClusterView(Value):
    """``GET /v1/cluster``."""

    cluster_id: str
    leader: LeaderView | None
    jobmanagers: list[JobManagerView]
    taskmanagers: list[TaskManagerView]
    served_by: str = ""


class WaitQuery(Value):
    """``GET /v1/jobs/{id}``'s query: a long poll, or none; an unknown parameter is a 400."""

    wait: float | None = Field(default=None, description="long poll: seconds, at most 60")
    since: str | None = Field(
        default=None, description="long poll: the state (or updated_at) you have"
    )


class LeadershipView(Value):
    """``GET /v1/cluster/leadership``: the terms of leadership, oldest first, and the leader."""

    history: list[LeadershipTerm] = Field(
        description="the latest terms (at most 100), each recorded by its leader once it had"
        " recovered; an epoch missing between two is a leader that died before that"
    )
    leader: LeaderView | None = None
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
    submission_sha256: str | None = Field(
        default=None,
        description="job_exists: the sha256 of the request body that created the job, if known",
    )
