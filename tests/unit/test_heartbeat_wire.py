"""The heartbeat's wire format across versions: what an older TaskManager sends and what a
newer one adds are both read by the leader (Payload.from_json decodes it in one pass)."""

from __future__ import annotations

import json

import pytest

from steward.errors import CorruptStateError, UnsupportedSchemaError
from steward.wire.heartbeat import AttemptReport, Heartbeat, HeartbeatReply, reports_digest
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase

REPORT = AttemptReport(
    job_id="job-1",
    attempt=2,
    epoch=3,
    phase=AttemptPhase.ENDED,
    outcome=FinishedEvent(value={"rows": 3}),
    lease_released=True,
)
BEAT = Heartbeat(
    taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3, attempts=[REPORT], seq=7
)


def test_an_older_taskmanagers_heartbeat_is_read() -> None:
    # An older TaskManager: no session, seq nor settled (fields added since).
    raw = json.loads(BEAT.to_json())
    for newer in ("session", "seq", "settled"):
        del raw[newer]
    beat = Heartbeat.from_json(json.dumps(raw))
    assert (beat.session, beat.seq, beat.settled) == (None, None, None)
    assert beat.attempts == [REPORT]


def test_equal_reports_have_one_digest_and_any_change_another() -> None:
    again = AttemptReport.model_validate_json(REPORT.model_dump_json())
    assert reports_digest([again]) == reports_digest([REPORT])
    progressed = REPORT.model_copy(update={"progress": {"rows": 4}})
    assert reports_digest([progressed]) != reports_digest([REPORT])
    assert reports_digest([]) != reports_digest([REPORT])


def test_an_older_leaders_reply_keeps_nothing() -> None:
    # An older leader: no taken nor resend (fields added since): every report goes in full.
    reply = HeartbeatReply.from_json(b'{"schema": 1, "epoch": 3, "leader": "jm-1"}')
    assert (reply.taken, reply.resend) == (None, False)


def test_a_newer_taskmanagers_fields_are_ignored_at_every_depth() -> None:
    raw = json.loads(BEAT.to_json())
    raw["compressed"] = True
    raw["attempts"][0]["unchanged_since"] = 6
    raw["attempts"][0]["outcome"]["spill_bytes"] = 10
    assert Heartbeat.from_json(json.dumps(raw)) == BEAT


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (b"{", CorruptStateError, "heartbeat: not valid JSON"),
        (b"[]", CorruptStateError, "heartbeat: expected a JSON object"),
        (b'{"taskmanager": "tm-1"}', CorruptStateError, "missing or invalid schema None"),
        (b'{"schema": true}', CorruptStateError, "missing or invalid schema True"),
        (b'{"schema": 2, "taskmanager": "tm-1"}', UnsupportedSchemaError, "newer Steward"),
        (b'{"schema": 0}', CorruptStateError, "missing or invalid schema 0"),
    ],
)
def test_a_body_that_is_no_heartbeat_says_why(
    body: bytes, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Heartbeat.from_json(body)


def test_a_valid_heartbeat_without_a_schema_is_refused() -> None:
    # Every field it needs but "schema": the schema is checked after a successful validation too.
    raw = json.loads(BEAT.to_json())
    del raw["schema"]
    with pytest.raises(CorruptStateError, match="missing or invalid schema None"):
        Heartbeat.from_json(json.dumps(raw))
    raw["schema"] = 2
    with pytest.raises(UnsupportedSchemaError, match="newer Steward"):
        Heartbeat.from_json(json.dumps(raw))
