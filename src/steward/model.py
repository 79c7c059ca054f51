"""The JSON models of the control plane: what Steward writes to ZooKeeper and blob storage.

Every payload carries ``"schema": 1``. Decoding is strict: unknown fields, a wrong type, a
missing field or a schema newer than :data:`SCHEMA_VERSION` is a :class:`CorruptStateError`
(:class:`UnsupportedSchemaError` for the last), never a half-read object. No pickle anywhere.
"""

from __future__ import annotations

import enum
import json
import re
from typing import Annotated, Any, ClassVar, Literal, Self, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from steward.errors import CorruptStateError, UnsupportedSchemaError

SCHEMA_VERSION = 1

JOB_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}"
_JOB_ID = re.compile(JOB_ID_PATTERN)

JsonValue: TypeAlias = Any
"""A JSON-serialisable value (the result value of a pipeline)."""


def check_job_id(job_id: str) -> str:
    """Return ``job_id`` if it is a valid id; ids become znode and file names."""
    if not _JOB_ID.fullmatch(job_id):
        raise ValueError(
            f"invalid job id {job_id!r}: use 1-128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return job_id


class Value(BaseModel):
    """Base of every model: strict (unknown fields are errors) and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Payload(Value):
    """Base of every stored top-level payload: a :class:`Value` with a schema version."""

    kind_name: ClassVar[str] = "payload"
    schema_version: int = Field(default=SCHEMA_VERSION, alias="schema")

    def to_json(self) -> bytes:
        return self.model_dump_json(by_alias=True).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Decode ``data``; anything but a valid payload of a known schema raises."""
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptStateError(f"{cls.kind_name}: not valid JSON ({exc})") from exc
        if not isinstance(raw, dict):
            raise CorruptStateError(f"{cls.kind_name}: expected a JSON object")
        schema = raw.get("schema")
        if isinstance(schema, bool) or not isinstance(schema, int):
            raise CorruptStateError(f"{cls.kind_name}: missing or invalid schema {schema!r}")
        if schema > SCHEMA_VERSION:
            raise UnsupportedSchemaError(
                f"{cls.kind_name}: schema {schema} was written by a newer Steward"
                f" (this version reads schema {SCHEMA_VERSION})"
            )
        if schema != SCHEMA_VERSION:
            raise CorruptStateError(f"{cls.kind_name}: missing or invalid schema {schema!r}")
        try:
            # Strict: a stored payload must have exactly the right JSON types ("1" is not 1,
            # false is not 0); a payload that only fits after coercion is corrupt.
            return cls.model_validate_json(data, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "payload"
            raise CorruptStateError(f"{cls.kind_name}: {where}: {first['msg']}") from exc


# ---------------------------------------------------------------- leadership and membership


class LeaderInfo(Payload):
    """``leader/info``: who leads, where to reach it, and under which epoch."""

    kind_name: ClassVar[str] = "leader info"
    contender: str
    address: str
    epoch: int = Field(ge=1)


class ContenderInfo(Payload):
    """Data of a ``leader/latch/<seq>`` node: who contends."""

    kind_name: ClassVar[str] = "contender"
    contender: str
    address: str


# ---------------------------------------------------------------- jobs


class NoRestart(Value):
    kind: Literal["none"] = "none"


class FixedDelayRestart(Value):
    kind: Literal["fixed-delay"] = "fixed-delay"
    attempts: int = Field(default=3, ge=0)
    delay: float = Field(default=10.0, ge=0, description="seconds")


class ExponentialDelayRestart(Value):
    kind: Literal["exponential-delay"] = "exponential-delay"
    initial: float = Field(default=1.0, gt=0, description="seconds")
    max: float = Field(default=60.0, gt=0, description="seconds")
    multiplier: float = Field(default=2.0, ge=1.0)
    max_attempts: int = Field(default=10, ge=0)


RestartStrategy = Annotated[
    NoRestart | FixedDelayRestart | ExponentialDelayRestart, Field(discriminator="kind")
]


class JobKind(enum.StrEnum):
    BATCH = "batch"
    STREAMING = "streaming"


class CheckpointSettings(Value):
    interval: float = Field(default=10.0, gt=0, description="seconds between checkpoints")


class ProgramKind(enum.StrEnum):
    """How the runner runs a job's entry file (the rule: :mod:`steward.runtime.program`)."""

    AUTO = "auto"
    """Decided from the source: a ``__main__`` guard makes a script, else ``main(ctx)``."""
    SCRIPT = "script"
    """A spark-submit script, run as ``__main__`` with ``sys.argv = [file, *args]``."""
    SDK = "sdk"
    """A pipeline module: the runner calls its entrypoint (``main(ctx)``)."""


class DependencyKind(enum.StrEnum):
    """What a file a job names is for: spark-submit's ``--py-files``, ``--files`` and so on."""

    PY_FILE = "py-file"
    """``--py-files``: on the driver's ``sys.path`` and in ``spark.submit.pyFiles``."""
    FILE = "file"
    """``--files``: in the driver's working directory and in ``spark.files``."""
    ARCHIVE = "archive"
    """``--archives``: unpacked under its alias in the driver's working directory and in
    ``spark.archives``."""
    JAR = "jar"
    """``--jars``: in ``spark.jars``."""


PLAIN_FILENAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"


class Dependency(Value):
    """A file a job names, stored once in the blob store under its content's SHA-256."""

    kind: DependencyKind
    filename: str = Field(pattern=PLAIN_FILENAME_PATTERN)
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int = Field(ge=0)
    alias: str | None = Field(
        default=None,
        pattern=PLAIN_FILENAME_PATTERN,
        description="archives only: the folder it is unpacked as (spark-submit's '#alias')",
    )

    @model_validator(mode="after")
    def _alias_only_for_archives(self) -> Self:
        if self.alias is not None and self.kind is not DependencyKind.ARCHIVE:
            raise ValueError(f"only an archive can have an alias, not a {self.kind.value}")
        return self

    @property
    def link_name(self) -> str:
        """The name it has in the driver's working directory (an archive's alias)."""
        return self.alias or self.filename


class JobSpec(Value):
    """What a user submits besides the artifact. See DESIGN.md, section Jobs."""

    job_id: str
    name: str = Field(default="", max_length=256)
    entrypoint: str = "main"
    args: list[str] = Field(default_factory=list)
    spark_conf: dict[str, str] = Field(default_factory=dict)
    slots: int = Field(default=1, ge=1, le=1024)
    restart_strategy: RestartStrategy = Field(default_factory=ExponentialDelayRestart)
    kind: JobKind = JobKind.BATCH
    checkpoint: CheckpointSettings = Field(default_factory=CheckpointSettings)
    labels: dict[str, str] = Field(default_factory=dict)
    program: ProgramKind = ProgramKind.AUTO
    dependencies: list[Dependency] = Field(default_factory=list, max_length=1000)
    requirements: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="pip requirement lines; a TaskManager builds them into a venv it caches",
    )

    @field_validator("job_id")
    @classmethod
    def _valid_job_id(cls, value: str) -> str:
        return check_job_id(value)

    @field_validator("entrypoint")
    @classmethod
    def _valid_entrypoint(cls, value: str) -> str:
        if not re.fullmatch(r"([A-Za-z_][\w.]*:)?[A-Za-z_]\w*", value):
            raise ValueError("entrypoint must be 'function' or 'module:function'")
        return value

    @field_validator("requirements")
    @classmethod
    def _one_line_each(cls, value: list[str]) -> list[str]:
        for line in value:
            if not line.strip() or len(line) > 1000 or any(c in line for c in "\r\n\0"):
                raise ValueError(f"requirement {line[:100]!r} is not one non-empty line")
        return value

    @model_validator(mode="after")
    def _distinct_link_names(self) -> Self:
        seen: set[str] = set()
        for dependency in self.dependencies:
            if dependency.kind is DependencyKind.JAR:
                continue  # jars are only passed to Spark, never linked into the folder
            if dependency.link_name in seen:
                raise ValueError(
                    f"two dependencies are named {dependency.link_name!r} in the driver's"
                    " working directory; give an archive another '#alias'"
                )
            seen.add(dependency.link_name)
        return self


class ArtifactKind(enum.StrEnum):
    PYTHON_FILE = "py"
    ZIPPED_FOLDER = "zip"


class Artifact(Value):
    """The pipeline's code: a single .py file or a zipped folder, base64-encoded."""

    filename: str = Field(min_length=1, max_length=255)
    kind: ArtifactKind
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    data_b64: str


class JobGraph(Payload):
    """The blob behind ``jobgraphs/<job-id>``: everything needed to run the job again."""

    kind_name: ClassVar[str] = "job graph"
    spec: JobSpec
    artifact: Artifact
    submitted_at: float


class JobGraphPointer(Payload):
    """``jobgraphs/<job-id>``: exists iff a new leader must recover the job."""

    kind_name: ClassVar[str] = "job graph pointer"
    blob: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    epoch: int = Field(ge=1)


# ---------------------------------------------------------------- results


class TerminalState(enum.StrEnum):
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class CleanupStatus(enum.StrEnum):
    DIRTY = "DIRTY"
    CLEAN = "CLEAN"


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


class AttemptState(enum.StrEnum):
    DEPLOYING = "DEPLOYING"
    """Sent to a TaskManager; not yet known to run."""
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    LOST = "LOST"
    """Its TaskManager died (or lost its session) before the attempt reported an outcome."""

    @property
    def is_final(self) -> bool:
        return self not in (AttemptState.DEPLOYING, AttemptState.RUNNING)


class SparkApp(Value):
    """The Spark application an attempt drives: its id, its UI, its master."""

    app_id: str = Field(min_length=1, max_length=256)
    ui_url: str | None = Field(default=None, max_length=2048)
    master: str = Field(default="", max_length=2048)


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
    epoch: int = Field(ge=1)


# ---------------------------------------------------------------- checkpoints


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


# ---------------------------------------------------------------- task managers


class ExecutionLease(Payload):
    """``executions/<job-id>``: the one attempt of a job allowed to run (DESIGN rule 3)."""

    kind_name: ClassVar[str] = "execution lease"
    taskmanager: str
    attempt: int = Field(ge=0)
    epoch: int = Field(ge=1)


class TaskManagerInfo(Payload):
    """``taskmanagers/<tm-id>``: a live TaskManager, where to reach it and its slots."""

    kind_name: ClassVar[str] = "task manager"
    address: str
    slots: int = Field(ge=0)
