"""Record format 2 (issue 22: under 600 B of ZooKeeper per running job): short keys, no job
id, base64url hashes; read back the same records, refused by a schema-1-only reader, and read
strictly. Every reader of this release reads both formats."""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steward.config import load
from steward.errors import ConfigurationError, CorruptStateError, UnsupportedSchemaError
from steward.testing.records import TAKEOVER_RECORD, with_every_field_set
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import (
    ATTEMPT_KEYS,
    DEFAULT_RECORD_FORMAT,
    POINTER_KEYS,
    STATUS_KEYS,
    decode_pointer,
    decode_status,
    encode_pointer,
    encode_status,
)
from steward.wire.records import AttemptRecord, JobStatusRecord
from steward.wire.states import AttemptState

JOB = TAKEOVER_RECORD.job_id

RUNNING = TAKEOVER_RECORD.model_copy(update={"hookless": True})

POINTER = JobGraphPointer(
    blob=f"jobgraphs/{JOB}/187c0e1f2a3b4c5d-0123456789ab",
    sha256=hashlib.sha256(b"graph").hexdigest(),
    epoch=3,
    submission_sha256=hashlib.sha256(b"body").hexdigest(),
)


# ---------------------------------------------------------------- the status record


def test_every_field_has_one_short_key() -> None:
    # A field added to a record without a schema-2 key would not be written at format 2.
    assert set(STATUS_KEYS) == set(JobStatusRecord.model_fields) - {"job_id", "schema_version"}
    assert set(ATTEMPT_KEYS) == set(AttemptRecord.model_fields)
    assert set(POINTER_KEYS) == set(JobGraphPointer.model_fields) - {"schema_version"}
    for keys in (STATUS_KEYS, ATTEMPT_KEYS, POINTER_KEYS):
        assert len(set(keys.values())) == len(keys)
        assert "schema" not in keys.values()


def test_a_status_record_at_format_2_is_short_and_reads_back_equal() -> None:
    data = encode_status(RUNNING, 2)

    assert data.startswith(b'{"schema":2,')
    assert JOB.encode() not in data  # the path says the job id
    assert len(data) < len(encode_status(RUNNING, 1)) * 3 // 5
    assert decode_status(data, JOB) == RUNNING


def test_format_1_is_the_schema_1_record_and_both_formats_read() -> None:
    assert encode_status(RUNNING, 1) == RUNNING.to_json()
    assert decode_status(RUNNING.to_json(), JOB) == RUNNING
    assert decode_status(encode_status(RUNNING, 2), JOB) == RUNNING


def test_a_status_record_with_every_field_set_round_trips_at_format_2() -> None:
    full = with_every_field_set(RUNNING)

    data = encode_status(full, 2)

    assert decode_status(data, JOB) == full
    # None where schema 2 implies a value is written as null, not left out.
    assert json.loads(data)["tm"] is None


def test_a_schema_2_record_read_by_a_schema_1_reader_is_refused_saying_why() -> None:
    # JobStatusRecord.from_json is exactly what a release before format 2 decodes with.
    with pytest.raises(UnsupportedSchemaError, match="schema 2 was written by a newer Steward"):
        JobStatusRecord.from_json(encode_status(RUNNING, 2))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((b'"e":2', b'"e":"2"'), "job status: epoch: Input should be a valid integer"),
        ((b'"s":"RUNNING",', b""), "job status: state: Field required"),
        ((b'"s":"RUNNING",', b'"state":"RUNNING",'), "job status: state: Field required"),
        ((b'"tm":"tm-0042"', b'"tm":42'), "job status: attempts.0.taskmanager: Input should"),
        ((b'"s":"RUNNING"', b'"s":"DANCING"'), "job status: state: Input should be"),
        ((b'{"schema":2,', b'{"schema":"2",'), "job status: missing or invalid schema"),
        ((b'{"schema":2,', b'{"schema":0,'), "job status: missing or invalid schema 0"),
    ],
)
def test_a_damaged_schema_2_record_is_a_clear_error(
    change: tuple[bytes, bytes], message: str
) -> None:
    data = encode_status(RUNNING, 2)
    assert change[0] in data
    bad = data.replace(*change, 1)

    with pytest.raises(CorruptStateError, match=message) as caught:
        decode_status(bad, JOB)
    assert not isinstance(caught.value, UnsupportedSchemaError)


def test_a_status_record_is_its_paths_job_whatever_it_holds() -> None:
    data = encode_status(RUNNING, 2)
    claiming = data[:-1] + b',"job_id":"another-job"}'

    found = decode_status(claiming, JOB)

    assert type(found) is JobStatusRecord
    assert found == RUNNING
    assert all(type(attempt) is AttemptRecord for attempt in found.attempts)


@given(
    st.binary(max_size=40)
    | st.dictionaries(
        st.sampled_from([*STATUS_KEYS.values(), *POINTER_KEYS.values(), "job_id", "schema"]),
        st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.lists(st.none()),
    ).map(lambda body: json.dumps(body, separators=(",", ":"))[1:].encode())
)
def test_any_damage_after_a_schema_2_head_is_a_corrupt_record_never_another_error(
    rest: bytes,
) -> None:
    # The leader skips a corrupt record (logged) and recovers the others: any other exception
    # would stop its recovery.
    for decode in (decode_status, decode_pointer):
        with contextlib.suppress(CorruptStateError):
            decode(b'{"schema":2,' + rest, JOB)


def test_a_newer_schema_is_refused_as_such() -> None:
    newer = b'{"schema":3,"x":1}'

    with pytest.raises(UnsupportedSchemaError, match=r"schema 3 .* reads schemas 1, 2"):
        decode_status(newer, JOB)
    with pytest.raises(UnsupportedSchemaError, match="schema 3"):
        decode_pointer(newer, JOB)


def test_not_json_or_not_an_object_is_a_clear_error() -> None:
    for bad in (b"", b"{", b"[1]", b'{"schema":2,"s":'):
        with pytest.raises(CorruptStateError, match="job status"):
            decode_status(bad, JOB)


def test_a_later_releases_optional_field_is_ignored_and_spacing_does_not_matter() -> None:
    body = json.loads(encode_status(RUNNING, 2))
    body["zz"] = {"new": True}  # a field a later release of schema 2 adds
    spaced = json.dumps(body, indent=1).encode()  # as a person may write it with zkCli.sh

    assert decode_status(spaced, JOB) == RUNNING


def test_the_record_in_memory_is_the_same_whichever_format_it_came_from() -> None:
    # A leader that read format 2 and writes format 1 writes what it would have read.
    via_2 = decode_status(encode_status(RUNNING, 2), JOB)

    assert via_2.to_json() == RUNNING.to_json()
    assert via_2.schema_version == 1


# ---------------------------------------------------------------- the graph pointer


def test_a_pointer_at_format_2_is_short_and_reads_back_equal() -> None:
    data = encode_pointer(POINTER, 2, JOB)
    body = json.loads(data)

    assert body == {
        "schema": 2,
        "b": "187c0e1f2a3b4c5d-0123456789ab",
        "h": body["h"],
        "e": 3,
        "s": body["s"],
    }
    assert len(body["h"]) == len(body["s"]) == 43
    assert len(data) < len(POINTER.to_json()) - 80
    assert decode_pointer(data, JOB) == POINTER
    assert decode_pointer(POINTER.to_json(), JOB) == POINTER
    with pytest.raises(UnsupportedSchemaError, match="schema 2 was written by a newer Steward"):
        JobGraphPointer.from_json(data)


@pytest.mark.parametrize(
    "blob",
    ["file", "./a/b", "a/b", "jobgraphs/other-job/x", f"jobgraphs/{JOB}/a/b", "file:///v2"],
)
def test_a_pointer_to_another_blob_key_reads_back_whole(blob: str) -> None:
    pointer = POINTER.model_copy(update={"blob": blob, "submission_sha256": None})

    assert decode_pointer(encode_pointer(pointer, 2, JOB), JOB) == pointer


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("h", "not-base64"), "job graph pointer: sha256: String should match"),
        (("h", "A" * 42 + "B"), "job graph pointer: sha256: String should match"),
        (("e", 0), "job graph pointer: epoch: Input should be greater than or equal to 1"),
        (("b", 7), "job graph pointer: blob: Input should be a valid string"),
    ],
)
def test_a_damaged_schema_2_pointer_is_a_clear_error(
    change: tuple[str, object], message: str
) -> None:
    body = json.loads(encode_pointer(POINTER, 2, JOB))
    body[change[0]] = change[1]

    with pytest.raises(CorruptStateError, match=message):
        decode_pointer(json.dumps(body, separators=(",", ":")).encode(), JOB)


# ---------------------------------------------------------------- any record


TEXT = st.text(min_size=1, max_size=6)
TIMES = st.floats(min_value=0.0, max_value=4e9, allow_nan=False)


@given(
    st.fixed_dictionaries(
        {
            "name": st.text(max_size=6),
            "reason": st.none() | st.text(max_size=5),
            "submitted_at": TIMES,
            "updated_at": TIMES,
            "failures": st.integers(min_value=0, max_value=3),
            "team": st.none() | st.just("default") | TEXT,
            "queue": st.none() | st.just("default") | TEXT,
            "priority": st.none() | st.integers(min_value=-5, max_value=5),
            "slots": st.none() | st.integers(min_value=1, max_value=4),
            "hookless": st.none() | st.booleans(),
            "timeout": st.none() | st.floats(min_value=0.0, max_value=1e6),
            "labels": st.dictionaries(TEXT, st.text(max_size=3), max_size=2),
            "timed_out": st.booleans(),
        }
    ),
    st.lists(
        st.builds(
            AttemptRecord,
            number=st.integers(min_value=1, max_value=30),
            taskmanager=TEXT,
            epoch=st.integers(min_value=1, max_value=9),
            state=st.sampled_from(AttemptState),
            started_at=st.none() | TIMES,
            adopted_by=st.lists(st.integers(min_value=1, max_value=9), max_size=2),
        ),
        max_size=3,
    ),
)
def test_any_status_record_and_pointer_round_trip_at_either_format(
    update: dict[str, Any], attempts: list[AttemptRecord]
) -> None:
    record = RUNNING.model_copy(update={**update, "attempts": attempts})

    for record_format in (1, 2):
        assert decode_status(encode_status(record, record_format), JOB) == record
        assert decode_pointer(encode_pointer(POINTER, record_format, JOB), JOB) == POINTER


# ---------------------------------------------------------------- the configuration key


def test_the_key_defaults_to_format_2_and_accepts_only_known_formats() -> None:
    assert load(environ={}).settings.zookeeper.record_format == DEFAULT_RECORD_FORMAT == 2
    key = "high-availability.record-format"
    assert load(environ={}).with_overrides({key: "1"}).settings.zookeeper.record_format == 1
    for bad in ("3", "two"):
        with pytest.raises(ConfigurationError) as caught:
            load(environ={}).with_overrides({key: bad})
        assert caught.value.key == key
