"""Status records are written without their default-valued fields (issue 22: ZooKeeper bytes
per running job), and read back the same, by this release and by one that wrote every field."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from steward.testing.records import NOW, with_every_field_set
from steward.wire.record_format import decode_status, encode_status
from steward.wire.records import (
    AttemptRecord,
    ExecutionLease,
    JobStatusRecord,
)
from steward.wire.states import AttemptState, JobState
from steward.wire.values import STORED

RUNNING = JobStatusRecord(
    job_id="job-1",
    state=JobState.RUNNING,
    submitted_at=NOW,
    updated_at=NOW + 0.1,
    attempts=[
        AttemptRecord(
            number=1, taskmanager="tm-1", epoch=1, state=AttemptState.RUNNING, started_at=NOW
        )
    ],
    attempt_count=1,
    epoch=1,
    submitter="admin",
    team="default",
    queue="default",
    priority=0,
    slots=1,
)

# What the release before compact records wrote for RUNNING: every field, nulls included.
WRITTEN_BY_THE_PREVIOUS_RELEASE = (
    b'{"schema":1,"job_id":"job-1","name":"","state":"RUNNING","reason":null,'
    b'"submitted_at":1795807764.7889566,"updated_at":1795807764.8889565,"attempts":[{"number":1,'
    b'"taskmanager":"tm-1","epoch":1,"state":"RUNNING","started_at":1795807764.7889566,'
    b'"ended_at":null,"cause":null,"adopted_by":[],"spark_app":null}],"attempt_count":1,'
    b'"failures":0,"restart_at":null,"epoch":1,"submitter":"admin","team":"default",'
    b'"queue":"default","priority":0,"proxy_user":null,"labels":{},"timeout":null,'
    b'"timed_out":false,"env":{},"slots":1}'
)


def nulls_and_empties(value: Any, where: str = "") -> list[str]:
    """Where ``value`` (decoded JSON) holds a null, an empty list or an empty object."""
    found = [where] if value is None or value in ([], {}) else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += nulls_and_empties(item, f"{where}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += nulls_and_empties(item, f"{where}[{n}]")
    return found


def test_a_status_record_is_written_without_nulls_or_empty_values() -> None:
    raw = json.loads(RUNNING.to_json())

    assert nulls_and_empties(raw) == []
    assert not {"name", "reason", "failures", "restart_at", "timed_out"} & set(raw)
    assert set(raw["attempts"][0]) == {"number", "taskmanager", "epoch", "state", "started_at"}


def test_a_status_record_is_written_with_its_schema_first() -> None:
    assert RUNNING.to_json().startswith(b'{"schema":1,"job_id":"job-1",')


def test_a_status_record_keeps_values_that_differ_from_the_defaults() -> None:
    # priority 0 and queue "default" are not the fields' defaults (None: "written before
    # queues"): a new leader needs them to adopt the job without its graph.
    raw = json.loads(RUNNING.to_json())
    kept = (raw["priority"], raw["queue"], raw["team"], raw["slots"])

    assert kept == (0, "default", "default", 1)


def test_a_compact_status_record_reads_back_equal() -> None:
    assert JobStatusRecord.from_json(RUNNING.to_json()) == RUNNING


def test_a_record_written_by_the_previous_release_still_reads() -> None:
    record = JobStatusRecord.from_json(WRITTEN_BY_THE_PREVIOUS_RELEASE)

    assert record == RUNNING
    assert len(record.to_json()) < len(WRITTEN_BY_THE_PREVIOUS_RELEASE) * 2 // 3


def test_the_previous_releases_decoder_reads_a_compact_record() -> None:
    # The previous release decoded with exactly this call; a field it misses is its default.
    old_read = JobStatusRecord.model_validate_json(
        RUNNING.to_json(), strict=True, extra="ignore", context=STORED
    )

    assert old_read == RUNNING
    assert "schema_version" in old_read.model_fields_set  # its schema check passes


def test_a_record_with_every_field_set_round_trips_whole() -> None:
    full = with_every_field_set(RUNNING)

    assert JobStatusRecord.from_json(full.to_json()) == full
    assert nulls_and_empties(json.loads(full.to_json())) == []


@given(
    st.fixed_dictionaries(
        {
            "reason": st.none() | st.text(max_size=5),
            "failures": st.integers(min_value=0, max_value=3),
            "priority": st.none() | st.integers(min_value=-5, max_value=5),
            "timeout": st.none() | st.floats(min_value=0.0, max_value=1e6),
            "labels": st.dictionaries(
                st.text(min_size=1, max_size=3), st.text(max_size=3), max_size=2
            ),
            "timed_out": st.booleans(),
        }
    )
)
def test_any_status_record_round_trips_and_holds_no_null(update: dict[str, Any]) -> None:
    record = RUNNING.model_copy(update=update)
    data = record.to_json()

    assert JobStatusRecord.from_json(data) == record
    assert nulls_and_empties(json.loads(data)) == []
    # Record format 2 (tests/unit/test_record_format.py) reads back the same record.
    assert decode_status(encode_status(record, 2), record.job_id) == record


def test_other_payloads_are_written_whole() -> None:
    # Only the per-job records in ZooKeeper are compact; the rest keep every field.
    lease = ExecutionLease(taskmanager="tm-1", attempt=0, epoch=1)

    assert json.loads(lease.to_json()) == {
        "schema": 1,
        "taskmanager": "tm-1",
        "attempt": 0,
        "epoch": 1,
    }
