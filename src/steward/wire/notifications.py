"""Job notifications: the webhooks a job names, the events, and what a receiver gets.

An event is kept in ZooKeeper's outbox (``notifications/<event-id>``) as a
:class:`NotificationRecord` from the moment it happens until every webhook took it (or the
leader gave up). Its id is deterministic, ``<job-id>:<attempt>:<event>``: a record written
again after a failover is the same event, and a receiver deduplicates by it (delivery is at
least once). The body a webhook gets is :func:`body` (the record without its targets), signed
with :func:`signature` in the ``X-Steward-Signature`` header.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
from typing import ClassVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator

from steward.wire.records import ErrorInfo
from steward.wire.values import Payload, Value

MAX_TARGETS = 8
"""Webhooks one job may name."""
MAX_URL_LENGTH = 2048
MAX_ERROR_MESSAGE = 1000
"""Characters of an error's message an event carries (the result keeps it whole)."""

EVENT_ID_HEADER = "X-Steward-Event-Id"
EVENT_HEADER = "X-Steward-Event"
SIGNATURE_HEADER = "X-Steward-Signature"


class NotificationEvent(enum.StrEnum):
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    RESTARTED = "RESTARTED"
    """An attempt failed and the restart strategy runs the job again."""
    TIMEOUT = "TIMEOUT"
    """Cancelled at its ``timeout`` (not also CANCELED)."""


ALL_EVENTS = tuple(NotificationEvent)


class NotificationTarget(Value):
    """A webhook a job names: its URL and the events it wants."""

    url: str = Field(max_length=MAX_URL_LENGTH)
    events: list[NotificationEvent] = Field(default_factory=lambda: list(ALL_EVENTS))

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
            raise ValueError(f"{redact_url(value)!r} is not an http:// or https:// URL")
        return value

    def wants(self, event: NotificationEvent) -> bool:
        return event in self.events


class NotificationRecord(Payload):
    """``notifications/<event-id>``: one event waiting for delivery (about 1 KB)."""

    kind_name: ClassVar[str] = "notification"
    event_id: str
    job_id: str
    event: NotificationEvent
    state: str
    """The job's state the event reports (RESTARTING for RESTARTED)."""
    attempt: int
    at: float
    """Unix time of the event."""
    name: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    error: ErrorInfo | None = None
    targets: list[NotificationTarget] = Field(default_factory=list)
    """The job's own webhooks that want this event; the cluster's are the leader's config."""
    cluster: bool = True
    """Whether the cluster's webhooks (``notifications.webhooks``) want it."""


def event_id(job_id: str, attempt: int, event: NotificationEvent) -> str:
    return f"{job_id}:{attempt}:{event.value}"


def short_error(error: ErrorInfo | None) -> ErrorInfo | None:
    """``error`` small enough for the outbox: no traceback, the message cut."""
    if error is None:
        return None
    message = error.message[:MAX_ERROR_MESSAGE]
    return ErrorInfo(type=error.type, message=message, permanent=error.permanent)


def body(record: NotificationRecord, cluster_id: str) -> bytes:
    """What a webhook receives: the event as JSON (its targets left out)."""
    fields = record.model_dump(mode="json", exclude={"targets", "cluster", "schema_version"})
    fields["cluster_id"] = cluster_id
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def signature(secret: bytes, payload: bytes) -> str:
    """The ``X-Steward-Signature`` of ``payload``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret, payload, hashlib.sha256).hexdigest()


def verify(secret: bytes, payload: bytes, header: str) -> bool:
    """Whether ``header`` is ``payload``'s signature (constant-time, as a receiver should)."""
    return hmac.compare_digest(signature(secret, payload), header)


def target_fields(text: str) -> dict[str, str | list[str]]:
    """The :class:`NotificationTarget` fields of ``URL`` or ``URL:EVENTS``
    (``https://h/hook:FAILED,TIMEOUT``), as ``--notify`` takes it: a last ``:`` part made only
    of event names is the filter, else part of the URL (a port). Checked with the spec."""
    url, _, tail = text.rpartition(":")
    names = [n.strip().upper() for n in tail.split(",")]
    if url and tail and all(n in NotificationEvent.__members__ for n in names):
        return {"url": url, "events": names}
    return {"url": text}


def refused_url(targets: list[NotificationTarget], allowed: tuple[str, ...]) -> str | None:
    """The first of ``targets``' URLs under none of the ``allowed`` prefixes, or None."""
    for target in targets:
        if not target.url.startswith(allowed) or not allowed:
            return target.url
    return None


def redact_url(url: str) -> str:
    """``url`` fit for a log or an answer: a query string or user info (often a token) hidden."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = (parts.hostname or "") + (f":{port}" if port is not None else "")
    if parts.username or parts.password:
        netloc = "***@" + netloc
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))
