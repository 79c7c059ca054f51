"""What a webhook receives: event ids, the body, its signature, URLs as logs show them, and the
``--notify URL[:EVENTS]`` form."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from pydantic import ValidationError

from steward.wire.jobs import JobSpec
from steward.wire.notifications import (
    NotificationEvent,
    NotificationRecord,
    NotificationTarget,
    body,
    event_id,
    redact_url,
    refused_url,
    signature,
    target_fields,
    verify,
)
from steward.wire.records import ErrorInfo

RECORD = NotificationRecord(
    event_id="etl:2:FAILED",
    job_id="etl",
    event=NotificationEvent.FAILED,
    state="FAILED",
    attempt=2,
    at=1700000000.5,
    name="nightly etl",
    labels={"team": "data"},
    error=ErrorInfo(type="ValueError", message="bad row"),
    targets=[NotificationTarget(url="https://hooks.example.com/x?token=secret")],
)


def test_an_event_id_names_the_job_the_attempt_and_the_event() -> None:
    assert event_id("etl", 2, NotificationEvent.FAILED) == "etl:2:FAILED"
    assert event_id("etl", 2, NotificationEvent.FAILED) == RECORD.event_id


def test_the_body_is_the_event_without_its_targets_and_always_the_same_bytes() -> None:
    sent = body(RECORD, "prod")
    assert sent == body(RECORD, "prod")
    fields = json.loads(sent)
    assert fields["event_id"] == "etl:2:FAILED" and fields["cluster_id"] == "prod"
    assert fields["error"]["message"] == "bad row" and fields["labels"] == {"team": "data"}
    assert "targets" not in fields and b"token" not in sent


def test_the_signature_is_the_hmac_sha256_of_the_body_and_a_changed_body_fails() -> None:
    sent = body(RECORD, "prod")
    expected = hmac.new(b"s3cret", sent, hashlib.sha256).hexdigest()
    assert signature(b"s3cret", sent) == f"sha256={expected}"
    assert verify(b"s3cret", sent, signature(b"s3cret", sent))
    assert not verify(b"s3cret", sent + b" ", signature(b"s3cret", sent))
    assert not verify(b"other", sent, signature(b"s3cret", sent))


def test_urls_in_logs_and_errors_hide_their_query_and_user_info() -> None:
    assert redact_url("https://u:pw@hooks.example.com:8443/a?token=t") == (
        "https://***@hooks.example.com:8443/a?***"
    )
    assert redact_url("http://hooks.example.com/a") == "http://hooks.example.com/a"


def test_notify_takes_a_url_and_optionally_the_events_after_its_last_colon() -> None:
    assert target_fields("https://h:8080/hook") == {"url": "https://h:8080/hook"}
    assert target_fields("https://h:8080/hook:failed,TIMEOUT") == {
        "url": "https://h:8080/hook",
        "events": ["FAILED", "TIMEOUT"],
    }


def test_a_job_names_only_http_webhooks_and_at_most_eight() -> None:
    spec = JobSpec(job_id="j", notifications=[target_fields("https://h/x:FAILED")])
    assert spec.notifications[0].events == [NotificationEvent.FAILED]
    with pytest.raises(ValidationError, match="not an http"):
        JobSpec(job_id="j", notifications=[{"url": "file:///etc/passwd"}])
    with pytest.raises(ValidationError):
        JobSpec(job_id="j", notifications=[{"url": f"https://h/{n}"} for n in range(9)])


def test_a_job_webhook_must_start_with_an_allowed_prefix_and_none_is_allowed_by_default() -> None:
    targets = [NotificationTarget(url="https://hooks.example.com/a")]
    assert refused_url(targets, ()) == "https://hooks.example.com/a"
    assert refused_url(targets, ("https://hooks.example.com/",)) is None
    assert refused_url(targets, ("https://other.example.com/",)) == targets[0].url
