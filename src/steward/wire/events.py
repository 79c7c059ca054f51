"""Live job events: what ``GET /v1/events`` streams (server-sent events), and its framing.

The stream is ``text/event-stream``. Each job state change is one event::

    id: <cursor>
    event: job
    data: <JobEvent as JSON>

and a blank line. ``reset`` events (:class:`ResetEvent`) tell the consumer that what it has may
be stale: the server cannot replay from the cursor it was given (none, too old, another
JobManager's, or events were missed while ZooKeeper was unreachable), so the consumer reads the
current state with a GET and keeps the stream: every change after the reset is streamed. A
stream always begins with a ``reset`` unless it resumes from a ``Last-Event-ID`` the server can
replay. A line starting with ``:`` is a comment (the keep-alive). The web UI, the CLI and
``steward.Client.wait`` consume it; docs/operations.md ("Live events") is its reference.
"""

from __future__ import annotations

from pydantic import Field

from steward.wire.states import JobState
from steward.wire.values import Value

JOB_EVENT = "job"
"""The event name of a :class:`JobEvent`."""
RESET_EVENT = "reset"
"""The event name of a :class:`ResetEvent`."""
MEDIA_TYPE = "text/event-stream"
MAX_LONG_POLL = 60.0
"""The longest ``wait=`` of ``GET /v1/jobs/{id}`` (seconds)."""
LONG_POLL_HEADER = "x-steward-long-poll"
"""Set on a long-poll's answer: the seconds it waited. An older JobManager, which ignores
``wait=``, does not set it: a client then knows to fall back to polling."""


class EventsQuery(Value):
    """``GET /v1/events``'s query; a parameter it does not know is a 400 naming it."""

    job: str | None = Field(default=None, description="only this job's events")
    state: list[str] | None = Field(
        default=None, description="only these states (repeat it, or commas)"
    )


class JobEvent(Value):
    """A job's new state, as any JobManager saw it in ZooKeeper."""

    job_id: str
    name: str = ""
    state: JobState
    reason: str | None = None
    epoch: int = Field(description="epoch of the leader that recorded the change (0: unknown)")
    at: float = Field(description="when the leader recorded it (Unix seconds)")
    submitter: str | None = None
    attempt_count: int = 0
    team: str | None = Field(default=None, description="the team that owns the job")


class ResetEvent(Value):
    """Re-read the state with a GET: the stream cannot tell what happened before ``cursor``."""

    cursor: str
    why: str = Field(
        description="new (a stream that does not resume), cannot-replay (the Last-Event-ID is"
        " another JobManager's, or too old) or missed-changes (ZooKeeper's session was lost)"
    )


def frame(event: str, data: str, event_id: str | None = None) -> bytes:
    """One server-sent event; ``data`` is one line of JSON (never holds a newline)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


def comment(text: str) -> bytes:
    """A comment line: ignored by consumers, it keeps proxies from closing an idle stream."""
    return f": {text}\n\n".encode()
