"""The runner protocol: how a TaskManager launches one attempt, and what the runner reports.

This module owns the wire format between a TaskManager (the parent) and the runner (the child
process that runs one attempt of a pipeline): the launch document, the events, the errors the
runner reports on its own account, and the exit codes. Both sides import it; nothing here starts
a process or imports pyspark.

Launching
---------
The parent creates a pipe for events, then starts::

    python -m steward.runtime.runner --events-fd N [--launch-timeout SECONDS]

(:func:`runner_command` builds that list) with ``start_new_session=True`` (the runner leads a
new process group, pgid = its pid, which everything it starts joins, the Spark JVM included),
``cwd`` = the attempt's work directory (it is *not* put on ``sys.path``), stdout and stderr
redirected to the attempt's log file, ``pass_fds=(N,)`` (N is the write end of the events
pipe; the parent closes its own copy so that EOF on the read end means the runner is gone)
and ``stdin=PIPE``.

stdin
    First line: one :class:`LaunchDocument` as JSON (``"schema": 1``) ending in ``b"\\n"``. If
    no complete line arrives within ``--launch-timeout`` (default 60 s) the runner reports
    ``failed`` and exits. After that line stdin stays open and the parent writes one byte
    (``b"\\n"``; any byte counts) at least every ``deadman_timeout / 3`` seconds. **Dead-man's
    switch:** if stdin reaches EOF, or no byte arrives for ``deadman_timeout`` seconds (the
    parent is dead, frozen or cut off; the clock starts when the launch line is read), the
    runner SIGKILLs its whole process group, which includes itself and its Spark JVM, plus any
    descendant that left the group. This holds until the runner's last instant, whatever user
    code is doing. It writes no event then: a frozen parent might never drain the pipe. The
    runner hides stdin from user code (fd 0 becomes /dev/null) so a pipeline cannot eat the
    heartbeats, and the events fd is not inherited by processes the pipeline starts.

fd N (events)
    One JSON object per line (:data:`RunnerEvent`, see :func:`decode_event`), in this order::

        started                     once, after the launch document was accepted
        progress | checkpoint ...   any number, any order
        finished | failed           exactly one, always the last

    ``started`` is missing only when the launch document itself was rejected (then the stream
    is a single ``failed``). After the final event the runner stops the SparkSession and
    kills what is left of its group, then exits: the process may outlive its final event by
    the few seconds ``SparkSession.stop`` takes. The final event is missing only when the
    runner did not get to write it: it was killed (SIGKILL, the dead-man's switch, an OOM
    kill) or user code called ``os._exit``. **The outcome of an attempt is its final event;
    an exit code without one, even 0, means the attempt failed** ("exited with code C
    without a final event").

    ``checkpoint`` metadata is one of::

        {"kind": "stage", "stage": NAME, "path": PATH, "stages": {NAME: PATH, ...}}
        {"kind": "micro-batch", "query_id": ID, "query_name": NAME|null, "run_id": ID,
         "batchId": INT, "numInputRows": INT, "timestamp": ISO-8601, "stages": {...}}

    ``stages`` is cumulative (every stage completed by this job so far, earlier attempts'
    included), so the latest checkpoint alone rebuilds ``completed_stages`` for the next
    attempt (:func:`completed_stages_of`) even when the store keeps only the newest one.

Exit codes
    0 after ``finished``; 1 after ``failed``; 2 when the command line or the events fd is
    unusable (nothing could be reported; details in the log); -9 (SIGKILL) after the
    dead-man's switch or an external kill; anything else: user code called ``os._exit``.

Warm runners
    ``--prewarm --spark-master M --deadman-timeout S`` starts a *spare*: the runner arms its
    dead-man's switch at once (the parent feeds stdin from the start), builds a SparkSession
    on master M with the default conf, runs a trivial query so the JVM is warm, reports
    ``ready`` and then does nothing until its launch document arrives (empty lines before it
    are heartbeats). From then on it is an ordinary attempt, except that ``ctx.spark`` is the
    warm session, given the job's runtime-settable SQL conf (:mod:`steward.wire.warm`
    says which jobs may use a spare). A spare that cannot warm reports ``failed`` and exits.
    The stream of a spare is: ``ready``, then the attempt's stream from ``started`` on.

Cancelling
    SIGTERM to the runner's pid is a graceful cancel: :class:`AttemptCancelled` is raised in
    the pipeline's main thread, so ``finally`` blocks run, and the attempt ends with ``failed``
    (type ``steward.wire.runner_protocol.AttemptCancelled``). A pipeline can ignore it, so the
    parent SIGKILLs the process group after a grace period. Send SIGTERM to the pid only:
    sent to the group it would also stop the Spark JVM under the pipeline's feet.

The parent may delete the execution lease (rule 3) only once the whole process group
is gone: the runner kills what is left of its group before it exits normally, but a killed
process may take a moment to go, and a process that called ``setsid`` itself is outside the
group (the dead-man's switch kills it while it is still the runner's descendant).
"""

from __future__ import annotations

import enum
import json
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import IO, Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator

from steward.errors import CorruptStateError, StewardError, UnsupportedSchemaError
from steward.wire.jobs import PLAIN_FILENAME_PATTERN, DependencyKind, JobSpec
from steward.wire.records import MAX_EARLIER_APPS, ErrorInfo, SparkApp
from steward.wire.values import SCHEMA_VERSION, JsonValue, Payload, Value, check_job_id

RUNNER_MODULE = "steward.runtime.runner"
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_LAUNCH_TIMEOUT = 60.0

EXIT_FINISHED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

# Bounds on what a pipeline may push through the pipe: a result value ends up in the
# JobResultStore and a progress event in the leader's memory; large data belongs in storage.
MAX_RESULT_BYTES = 1024 * 1024
MAX_PROGRESS_BYTES = 64 * 1024


def runner_command(events_fd: int, python: str | None = None) -> list[str]:
    """The argv that starts a runner which writes its events to ``events_fd``."""
    return [python or sys.executable, "-m", RUNNER_MODULE, "--events-fd", str(events_fd)]


def spare_command(
    events_fd: int, *, spark_master: str, deadman_timeout: float, python: str | None = None
) -> list[str]:
    """The argv of a warm spare runner (see "Warm runners" in the module docstring)."""
    return [
        *runner_command(events_fd, python),
        "--prewarm",
        "--spark-master",
        spark_master,
        "--deadman-timeout",
        repr(float(deadman_timeout)),
    ]


# ---------------------------------------------------------------- errors


class RunnerError(StewardError):
    """Base of the errors the runner reports on its own account (not raised by user code)."""


class LaunchError(RunnerError):
    """The launch document is missing, malformed or inconsistent."""


class ArtifactError(RunnerError):
    """The pipeline cannot be found in its artifact: no file, no entry module, no function."""


class WarmupError(RunnerError):
    """A spare runner could not build or warm its SparkSession (it never ran an attempt)."""


class ResultError(RunnerError):
    """The value returned by the pipeline is not JSON-serialisable, or too large."""


class AttemptCancelled(BaseException):
    """Raised in the pipeline's main thread when the runner receives SIGTERM.

    A BaseException so that a pipeline's ``except Exception`` does not swallow the cancel.
    """


def error_type_name(cls: type[BaseException]) -> str:
    """``ValueError`` for builtins, ``package.module.Class`` for everything else."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------- launch document


class RunMode(enum.StrEnum):
    """What the attempt runs: the entrypoint, or the module's optional ``initialize`` hook."""

    MAIN = "main"
    INITIALIZE = "initialize"


class LocalDependency(Value):
    """A dependency of the job as its TaskManager made it available on this host.

    ``path`` is absolute: the cached file, or for an archive the folder it was unpacked to
    (``packed`` is then the archive file itself, which Spark ships to executors).
    """

    kind: DependencyKind
    path: str = Field(min_length=1)
    link_name: str = Field(pattern=PLAIN_FILENAME_PATTERN)
    packed: str | None = None


class LaunchDocument(Payload):
    """The first line on the runner's stdin: everything one attempt needs.

    ``artifact_path`` is an absolute local path: a ``.py`` file or an unpacked folder (see
    :mod:`steward.runtime.artifact` for how the entry module is found). ``checkpoint_dir`` is
    a local path or an fsspec URL Spark can also read, per job and stable across attempts.
    ``completed_stages`` maps stage names to the paths that earlier attempts materialised
    (see :func:`completed_stages_of`); ``last_checkpoint`` is the metadata of the job's latest
    completed checkpoint, or null.
    """

    kind_name: ClassVar[str] = "launch document"
    job_id: str
    attempt: int = Field(ge=1)
    epoch: int = Field(ge=1)
    mode: RunMode = RunMode.MAIN
    is_recovery: bool = False
    spec: JobSpec
    artifact_path: str = Field(min_length=1)
    checkpoint_dir: str = Field(min_length=1)
    spark_master: str = Field(default=DEFAULT_SPARK_MASTER, min_length=1)
    completed_stages: dict[str, str] = Field(default_factory=dict)
    last_checkpoint: dict[str, JsonValue] | None = None
    deadman_timeout: float = Field(gt=0)
    workdir: str | None = None
    """The attempt's work directory: a warm spare, started elsewhere, moves there at handover."""
    dependencies: list[LocalDependency] = Field(default_factory=list)
    """The spec's dependencies, fetched and cached by the TaskManager, in the spec's order."""
    earlier_spark_apps: list[str] = Field(default_factory=list, max_length=MAX_EARLIER_APPS)
    """Spark application ids of the job's earlier attempts (from the leader's records): on a
    standalone master the runner kills those still there before the job's code runs."""
    python_env: str | None = None
    """The prefix of the job's Python environment (from ``requirements`` or an archive with
    ``spark.pyspark.python``), or None for the TaskManager's own Python."""
    event_log_dir: str | None = None
    """Where the session writes its Spark event log (the TaskManager's ``history.event-log``
    keys), unless the job's own ``spark.eventLog.*`` says otherwise; None: no event log."""

    @field_validator("job_id")
    @classmethod
    def _valid_job_id(cls, value: str) -> str:
        return check_job_id(value)

    @field_validator("artifact_path")
    @classmethod
    def _absolute_artifact(cls, value: str) -> str:
        if not PurePosixPath(value).is_absolute():
            raise ValueError(f"must be an absolute path, got {value!r}")
        return value

    @model_validator(mode="after")
    def _same_job(self) -> LaunchDocument:
        if self.spec.job_id != self.job_id:
            raise ValueError(
                f"job_id {self.job_id!r} differs from spec.job_id {self.spec.job_id!r}"
            )
        return self


def completed_stages_of(checkpoint: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``completed_stages`` of a new attempt, from the job's latest checkpoint metadata."""
    if not checkpoint:
        return {}
    stages = checkpoint.get("stages")
    if not isinstance(stages, dict):
        return {}
    return {str(name): str(path) for name, path in stages.items()}


# ---------------------------------------------------------------- events


class BaseEvent(Payload):
    """Fields every event has: the schema version, the kind (``event``) and the time."""

    kind_name: ClassVar[str] = "runner event"
    at: float = Field(default_factory=time.time, description="wall clock, seconds since epoch")


class StartedEvent(BaseEvent):
    """The launch document was accepted; the runner is loading the pipeline."""

    event: Literal["started"] = "started"
    pid: int
    pgid: int


class ReadyEvent(BaseEvent):
    """A spare runner's SparkSession is built and warm; it waits for its launch document."""

    event: Literal["ready"] = "ready"
    pid: int
    seconds: float = Field(ge=0, description="how long warming took")


class ProgressEvent(BaseEvent):
    """What the pipeline passed to ``ctx.report_progress(...)``."""

    event: Literal["progress"] = "progress"
    progress: dict[str, JsonValue]


class CheckpointEvent(BaseEvent):
    """A completed micro-batch or a materialised stage (metadata: see the module docstring)."""

    event: Literal["checkpoint"] = "checkpoint"
    metadata: dict[str, JsonValue]


class SparkAppEvent(BaseEvent):
    """The attempt's SparkContext started (by ``ctx.spark`` or the pipeline's own code)."""

    event: Literal["spark-app"] = "spark-app"
    app: SparkApp


class FinishedEvent(BaseEvent):
    """The hook returned; ``value`` is its return value as JSON (null for None)."""

    event: Literal["finished"] = "finished"
    value: JsonValue = None


class FailedEvent(BaseEvent):
    """The attempt failed: the exception's type, message and (for user code) traceback."""

    event: Literal["failed"] = "failed"
    error: ErrorInfo


RunnerEvent: TypeAlias = Annotated[
    StartedEvent
    | ReadyEvent
    | ProgressEvent
    | CheckpointEvent
    | SparkAppEvent
    | FinishedEvent
    | FailedEvent,
    Field(discriminator="event"),
]
FinalEvent: TypeAlias = FinishedEvent | FailedEvent
_EVENT = TypeAdapter[RunnerEvent](RunnerEvent)


def encode_event(event: BaseEvent) -> bytes:
    """One line of the events stream (JSON escapes newlines, so it stays one line)."""
    return event.to_json() + b"\n"


def decode_event(line: bytes | str) -> RunnerEvent:
    """Decode one line of the events stream; anything else raises CorruptStateError."""
    try:
        raw = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStateError(f"runner event: not valid JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise CorruptStateError("runner event: expected a JSON object")
    schema = raw.get("schema")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA_VERSION:
        raise UnsupportedSchemaError(f"runner event: schema {schema} is newer than this Steward")
    if schema != SCHEMA_VERSION:
        raise CorruptStateError(f"runner event: missing or invalid schema {schema!r}")
    try:
        return _EVENT.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "event"
        raise CorruptStateError(f"runner event: {where}: {first['msg']}") from exc


def iter_events(stream: IO[bytes]) -> Iterator[RunnerEvent]:
    """Decode events from a binary stream (the read end of the pipe) until EOF."""
    for line in stream:
        if line.strip():
            yield decode_event(line)


def is_final(event: BaseEvent) -> bool:
    return isinstance(event, FinishedEvent | FailedEvent)
