"""Attempts' logs over HTTP: where each server serves them, the query every such route takes,
and the headers that travel with the bytes.

A TaskManager serves the logs of the attempts it ran (``runner.log``: the runner's, the
pipeline's and the Spark JVM's output) on its own HTTP port; every JobManager serves the same
bytes for any attempt of any job by asking the TaskManager that ran it. The body is the log
itself (``text/plain``, streamed: never read into memory whole); once the attempt ended its
log is also archived in the HA storage, from which JobManagers serve it when the TaskManager
no longer can; errors are
:class:`~steward.wire.rest.ErrorBody` documents. Both ends use this module, so a path or a
header cannot differ between them.
"""

from __future__ import annotations

from pydantic import Field

from steward.wire.values import Value

LOG_MEDIA_TYPE = "text/plain; charset=utf-8"
"""What a log is answered as. Its bytes are sent as written (not every line is UTF-8)."""
START_HEADER = "x-steward-log-start"
"""The byte offset in the file of the first byte of the body: a client that lost the stream
asks again with ``offset`` = this + the bytes it got."""
TASKMANAGER_HEADER = "x-steward-taskmanager"
"""Which TaskManager the JobManager read the log from (answers of the proxy)."""
SOURCE_HEADER = "x-steward-log-source"
"""``archive`` when a JobManager served the log from the log archive in the HA storage (the
TaskManager no longer had it); absent when it came from the TaskManager."""
MAX_ATTEMPT = 1_000_000_000
"""Attempt numbers above this are refused (400): no job restarts that often."""


class LogQuery(Value):
    """What part of a log to send: the same three parameters on every log route."""

    offset: int = Field(default=0, ge=0, description="start at this byte of the file")
    tail: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="start at the last N lines instead (never before offset)",
    )
    follow: bool = Field(
        default=False,
        description="keep sending what is appended until the attempt ends",
    )

    def params(self) -> dict[str, str]:
        """As query parameters (what the proxy and the client send)."""
        found = {"offset": str(self.offset), "follow": "true" if self.follow else "false"}
        if self.tail is not None:
            found["tail"] = str(self.tail)
        return found


def taskmanager_log_path(job_id: str, attempt: int, *, internal: bool = False) -> str:
    """An attempt's log on the TaskManager that ran it: ``/v1/...`` takes users' tokens,
    ``/internal/v1/...`` the cluster's internal credential (what JobManagers send)."""
    prefix = "/internal" if internal else ""
    return f"{prefix}/v1/attempts/{job_id}/{attempt}/log"


def job_log_path(job_id: str, attempt: int) -> str:
    """An attempt's log on any JobManager."""
    return f"/v1/jobs/{job_id}/attempts/{attempt}/log"
