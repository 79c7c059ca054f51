"""What a user submits, and the job graph the leader stores for it.

A :class:`JobSpec` (settings, restart strategy, dependencies) and the job's :class:`Artifact`
make its :class:`JobGraph`, kept in blob storage; ``jobs/<job-id>/graph`` holds the small
:class:`JobGraphPointer` to it.
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, ClassVar, Literal, Self

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from steward.wire.job_options import MAX_TIMEOUT, check_env, timeout_seconds
from steward.wire.notifications import MAX_TARGETS, NotificationTarget
from steward.wire.patterns import OS_USER_PATTERN, TEAM_PATTERN
from steward.wire.values import Payload, Value, check_job_id, check_text


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
    """How the runner runs a job's entry file (the rule: :mod:`steward.artifacts.programs`)."""

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

MAX_LABELS = 64
QUEUE_PATTERN = r"^[a-z0-9][a-z0-9_.\-]{0,62}$"
MAX_PRIORITY = 1_000_000
MAX_LABEL_LENGTH = 256


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
    """What a user submits besides the artifact. See docs/architecture.md."""

    job_id: str
    name: str = Field(default="", max_length=256)
    entrypoint: str = "main"
    args: list[str] = Field(default_factory=list)
    spark_conf: dict[str, str] = Field(default_factory=dict)
    slots: int = Field(default=1, ge=1, le=1024)
    restart_strategy: RestartStrategy = Field(default_factory=ExponentialDelayRestart)
    kind: JobKind = JobKind.BATCH
    checkpoint: CheckpointSettings = Field(default_factory=CheckpointSettings)
    labels: dict[str, str] = Field(default_factory=dict, max_length=MAX_LABELS)
    program: ProgramKind = ProgramKind.AUTO
    dependencies: list[Dependency] = Field(default_factory=list, max_length=1000)
    requirements: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="pip requirement lines; a TaskManager builds them into a venv it caches",
    )
    submitter: str | None = Field(
        default=None,
        max_length=64,
        description="who submitted it: set by the JobManager from the caller's token (what a"
        " client sends is replaced); None in jobs stored before authentication",
    )
    team: str | None = Field(
        default=None,
        pattern=f"^{TEAM_PATTERN}$",
        description="the team that owns it: one the submitter is in (its only one, or the"
        " default team, when not named); None in jobs stored before teams (the default team)",
    )
    timeout: Annotated[float | None, BeforeValidator(timeout_seconds)] = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description="seconds (or a duration: 90s, 45m, 2h) the job may take from its"
        " submission, over all attempts; then it is cancelled (reason TIMEOUT). None: no limit",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="environment variables of the driver's process; shown redacted",
    )
    notifications: list[NotificationTarget] = Field(
        default_factory=list,
        max_length=MAX_TARGETS,
        description="the job's own webhooks (under notifications.allowed-urls), besides the"
        " cluster's",
    )
    queue: str = Field(
        default="default",
        pattern=QUEUE_PATTERN,
        description="the queue (scheduling.queues) the job waits in for slots",
    )
    priority: int = Field(
        default=0,
        ge=-MAX_PRIORITY,
        le=MAX_PRIORITY,
        description="within its queue, a higher priority starts first (then the older job)",
    )
    max_concurrent: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="at most this many jobs of this name have an attempt at once (as"
        " Databricks' max_concurrent_runs); None: no limit",
    )
    proxy_user: str | None = Field(
        default=None,
        pattern=OS_USER_PATTERN,
        description="the OS user the driver runs as on the TaskManager (spark-submit's"
        " --proxy-user); only one security.proxy-users maps the submitter to. None: the"
        " TaskManager's own user",
    )

    @field_validator("job_id")
    @classmethod
    def _valid_job_id(cls, value: str) -> str:
        return check_job_id(value)

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str, info: ValidationInfo) -> str:
        return check_text(value, "name", info)

    @field_validator("labels")
    @classmethod
    def _printable_labels(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        for key, label in value.items():
            if not key or len(key) > MAX_LABEL_LENGTH or len(label) > MAX_LABEL_LENGTH:
                raise ValueError(
                    f"label {key[:40]!r}: keys are 1 to {MAX_LABEL_LENGTH} characters, values"
                    f" at most {MAX_LABEL_LENGTH}"
                )
            check_text(key, "a label's key", info)
            check_text(label, f"label {key!r}", info)
        return value

    @field_validator("env")
    @classmethod
    def _valid_env(cls, value: dict[str, str]) -> dict[str, str]:
        return check_env(value)

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
    def _named_if_limited(self) -> Self:
        if self.max_concurrent is not None and not self.name:
            raise ValueError("max_concurrent limits the jobs of one name: give the job a name")
        return self

    @model_validator(mode="after")
    def _proxy_user_without_host_cache(self) -> Self:
        # A built environment lives in the TaskManager's host cache, which only the
        # TaskManager's user may read (docs/security.md#proxy-users); the files a job names
        # are copied into its attempt's folder for its proxy user.
        if self.proxy_user is not None and self.requirements:
            raise ValueError(
                "a job run as a proxy user cannot name requirements yet: build its environment"
                " into an archive (--archives env.tar.gz#environment) or package it with the"
                " pipeline"
            )
        return self

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
    submission_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The sha256 of the ``POST /v1/jobs`` body that created the job (None before it was
    kept): a retry of the same body is the same submission (``job_exists`` carries it)."""


class JobGraphPointer(Payload):
    """``jobgraphs/<job-id>``: exists iff a new leader must recover the job."""

    kind_name: ClassVar[str] = "job graph pointer"
    blob: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    epoch: int = Field(ge=1)
    submission_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The graph's :attr:`JobGraph.submission_sha256`, here so a duplicate submission is
    answered from the job table or one small read, never the blob."""
