"""The ``notifications.*`` keys: webhooks the leader calls when a job ends or restarts."""

from __future__ import annotations

from steward.config.option import Option, positive
from steward.config.units import to_duration, to_int, to_str

EVENT_NAMES = ("FINISHED", "FAILED", "CANCELED", "RESTARTED", "TIMEOUT")
"""The events a webhook can ask for (:class:`steward.wire.notifications.NotificationEvent`)."""
MAX_OUTBOX = 5000


def _urls(value: str) -> str | None:
    for url in (u.strip() for u in value.split(",")):
        if url and not url.startswith(("http://", "https://")):
            return f"{url.split('?')[0]!r} is not an http:// or https:// URL"
    return None


def _events(value: str) -> str | None:
    unknown = [e for e in (n.strip().upper() for n in value.split(",")) if e not in EVENT_NAMES]
    if unknown:
        return f"unknown events {unknown} (known: {', '.join(EVENT_NAMES)})"
    return None


NOTIFICATION_OPTIONS: tuple[Option, ...] = (
    Option(
        "notifications.webhooks",
        to_str,
        "",
        "Comma-separated http(s) URLs the leader POSTs every job's events to (those of"
        " `notifications.events`). Empty: none (a job may still name its own, see"
        " `notifications.allowed-urls`). See [operations.md](operations.md#notifications).",
        _urls,
        setting="notifications.webhooks",
    ),
    Option(
        "notifications.events",
        to_str,
        ",".join(EVENT_NAMES),
        "The events `notifications.webhooks` get, comma-separated, of FINISHED, FAILED,"
        " CANCELED, RESTARTED (an attempt failed and the job will run again) and TIMEOUT (the"
        " job was cancelled at its `timeout`; it is not also CANCELED).",
        _events,
        setting="notifications.events",
    ),
    Option(
        "notifications.allowed-urls",
        to_str,
        "",
        "Comma-separated URL prefixes a job's own webhooks (`notifications` in its spec,"
        " `steward submit --notify`) must start with (`https://hooks.example.com/`). Empty (the"
        " default): a job may name none, and a submission that does is refused with 400. The"
        " leader calls them from its own host, so allow only what every submitter may reach.",
        setting="notifications.allowed_urls",
    ),
    Option(
        "notifications.secret-file",
        to_str,
        "",
        "File holding the HMAC secret every webhook's body is signed with (header"
        " `X-Steward-Signature: sha256=<hex>`). Read by the leader at each grant; never logged."
        " Empty: bodies are sent unsigned.",
        setting="notifications.secret_file",
    ),
    Option(
        "notifications.timeout",
        to_duration,
        "10s",
        "How long one webhook call may take before it counts as failed and is retried.",
        positive,
        setting="notifications.timeout",
    ),
    Option(
        "notifications.max-age",
        to_duration,
        "1d",
        "How long the leader keeps retrying an event (exponential back-off with jitter, at"
        " most 5 minutes apart) before it gives up on it (an ERROR log line and"
        ' `steward_notifications_total{outcome="given_up"}`).',
        positive,
        setting="notifications.max_age",
    ),
    Option(
        "notifications.outbox-max",
        to_int,
        MAX_OUTBOX,
        "Most events waiting for delivery in ZooKeeper (`notifications/`, about 1 KB each):"
        " past it the oldest is dropped (a WARNING and"
        ' `steward_notifications_total{outcome="dropped"}`), so a receiver down for long cannot'
        f" grow ZooKeeper for ever. At most {MAX_OUTBOX}: a new leader lists the outbox in one"
        " read, which must stay under ZooKeeper's 1 MB answer limit with 128-character job ids.",
        lambda v: None if 1 <= v <= MAX_OUTBOX else f"must be 1 to {MAX_OUTBOX}",
        setting="notifications.outbox_max",
    ),
)
