"""Livy's batch API as Steward answers it: the bodies of ``/batches``, Livy's batch states,
and the mapping between Livy's integer batch ids and Steward's job ids.

Field names and shapes are Livy's (``apache/incubator-livy``: ``CreateBatchRequest``,
``BatchSessionServlet``, ``SessionState``), so a Livy client works unchanged. A batch ``n`` is
the job ``livy-<n>`` (:func:`batch_job_id`): no table to look up, the same on every
JobManager and after any failover. docs/coming-from.md ("Livy") has the state table.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from pydantic import Field

from steward.wire.states import JobState
from steward.wire.values import Value

JOB_ID_PREFIX = "livy-"
MAX_BATCH_ID = 2**31 - 1
"""Livy's ids are Java ints: its clients decode nothing larger."""
_JOB_ID = re.compile(r"livy-(0|[1-9][0-9]{0,9})")
LOG_TAIL = 10
"""Lines of log a batch's own view carries, as Livy's."""
MAX_LIST = 1000
"""The largest ``size`` of ``GET /batches`` and of ``GET /batches/{id}/log``."""


def batch_job_id(batch_id: int) -> str:
    """The job a batch id names."""
    return f"{JOB_ID_PREFIX}{batch_id}"


def batch_id_of(job_id: str) -> int | None:
    """The batch id of a job a Livy client submitted, or None (any other job has none)."""
    found = _JOB_ID.fullmatch(job_id)
    if found is None:
        return None
    number = int(found[1])
    return number if number <= MAX_BATCH_ID else None


def parse_batch_id(text: str) -> int | None:
    """A batch id as written in a path (``42``), or None if it could name no batch."""
    return batch_id_of(JOB_ID_PREFIX + text)


class BatchState(enum.StrEnum):
    """Livy's ``SessionState`` names a batch can take here: only those every Livy client knows
    (Airflow's ``BatchState`` enum has no ``recovering``)."""

    NOT_STARTED = "not_started"
    STARTING = "starting"
    RUNNING = "running"
    SHUTTING_DOWN = "shutting_down"
    SUCCESS = "success"
    DEAD = "dead"
    KILLED = "killed"


BATCH_STATES: dict[JobState, BatchState] = {
    JobState.SUBMITTED: BatchState.NOT_STARTED,
    JobState.INITIALIZING: BatchState.STARTING,
    JobState.SCHEDULED: BatchState.STARTING,
    JobState.RUNNING: BatchState.RUNNING,
    # Not Livy's "recovering" (its server's own restart): Airflow's LivyHook cannot parse it.
    JobState.RESTARTING: BatchState.RUNNING,
    JobState.CANCELLING: BatchState.SHUTTING_DOWN,
    JobState.FINISHED: BatchState.SUCCESS,
    JobState.FAILED: BatchState.DEAD,
    JobState.CANCELED: BatchState.KILLED,
}
"""Every job state's Livy name (a unit test checks that none is missing)."""


ConfValue = str | int | float | bool


class BatchRequest(Value):
    """``POST /batches``: Livy's ``CreateBatchRequest``. A field sent as null is absent."""

    file: str | None = Field(default=None, max_length=4096)
    proxyUser: str | None = None  # noqa: N815 (Livy's spelling)
    className: str | None = None  # noqa: N815
    args: list[ConfValue] | None = Field(default=None, max_length=10_000)
    jars: list[str] | None = Field(default=None, max_length=1000)
    pyFiles: list[str] | None = Field(default=None, max_length=1000)  # noqa: N815
    files: list[str] | None = Field(default=None, max_length=1000)
    archives: list[str] | None = Field(default=None, max_length=1000)
    driverMemory: str | None = Field(default=None, max_length=100)  # noqa: N815
    driverCores: int | None = Field(default=None, ge=1, le=1024)  # noqa: N815
    executorMemory: str | None = Field(default=None, max_length=100)  # noqa: N815
    executorCores: int | None = Field(default=None, ge=1, le=1024)  # noqa: N815
    numExecutors: int | None = Field(default=None, ge=1, le=100_000)  # noqa: N815
    queue: str | None = Field(default=None, max_length=256)
    name: str | None = Field(default=None, max_length=256)
    conf: dict[str, ConfValue] | None = Field(default=None, max_length=1000)

    def sizing(self) -> dict[str, str]:
        """The sizing fields given, as spark-submit options (Livy's own names)."""
        fields = ("driverMemory", "driverCores", "executorMemory", "executorCores")
        found = {k: getattr(self, k) for k in (*fields, "numExecutors", "queue")}
        return {k: str(v) for k, v in found.items() if v is not None}

    def arguments(self) -> list[str]:
        """``args`` as the script's ``sys.argv[1:]`` (a number as Livy's Jackson would read it)."""
        return [_conf_text(arg) for arg in self.args or []]

    def spark_conf(self) -> dict[str, str]:
        """``conf`` as Spark's strings (``true``, not Python's ``True``)."""
        return {k: _conf_text(v) for k, v in (self.conf or {}).items()}


def _conf_text(value: ConfValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class AppInfo(Value):
    driverLogUrl: str | None = None  # noqa: N815
    sparkUiUrl: str | None = None  # noqa: N815


class Batch(Value):
    """A batch as Livy shows one (``GET /batches/{id}``, ``POST /batches``)."""

    id: int
    name: str | None = None
    owner: str | None = None
    proxyUser: str | None = None  # noqa: N815
    state: BatchState
    appId: str | None = None  # noqa: N815
    appInfo: AppInfo = Field(default_factory=AppInfo)  # noqa: N815
    log: list[str] = Field(default_factory=list)


class BatchList(Value):
    """``GET /batches``: Livy's page, ``from`` an offset into the batches, oldest first."""

    from_: int = Field(alias="from")
    total: int
    sessions: list[Batch]

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class BatchStateView(Value):
    """``GET /batches/{id}/state``."""

    id: int
    state: BatchState


class BatchLog(Value):
    """``GET /batches/{id}/log``: lines ``from`` to ``from + size`` of the latest attempt's log."""

    id: int
    from_: int = Field(alias="from")
    total: int
    log: list[str]

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class LivyMessage(Value):
    """Livy's answer to a DELETE and to every error: ``{"msg": ...}``. ``code`` is Steward's
    machine-readable reason (Livy clients ignore it)."""

    msg: str
    code: str | None = None
