"""The runner protocol's models: launch document, events, and their strict decoding."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from steward.errors import CorruptStateError, UnsupportedSchemaError
from steward.wire.jobs import JobSpec
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import (
    RUNNER_MODULE,
    ArtifactError,
    CheckpointEvent,
    FailedEvent,
    FinishedEvent,
    LaunchDocument,
    ProgressEvent,
    RunMode,
    StartedEvent,
    completed_stages_of,
    decode_event,
    encode_event,
    error_type_name,
    is_final,
    iter_events,
    runner_command,
)


def launch_fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "schema": 1,
        "job_id": "job-7",
        "attempt": 2,
        "epoch": 5,
        "spec": {"job_id": "job-7", "args": ["in", "out"]},
        "artifact_path": "/srv/artifacts/job-7/pipeline.py",
        "checkpoint_dir": "file:///shared/ck/job-7",
        "deadman_timeout": 15,
    }
    fields.update(overrides)
    return fields


def decode_launch(**overrides: Any) -> LaunchDocument:
    return LaunchDocument.from_json(json.dumps(launch_fields(**overrides)))


def test_a_minimal_launch_document_gets_the_documented_defaults() -> None:
    launch = decode_launch()

    assert launch.mode is RunMode.MAIN
    assert launch.is_recovery is False
    assert launch.spark_master == "local[*]"
    assert launch.completed_stages == {}
    assert launch.last_checkpoint is None
    assert launch.spec == JobSpec(job_id="job-7", args=["in", "out"])


def test_a_launch_document_survives_a_round_trip() -> None:
    launch = decode_launch(
        mode="initialize",
        is_recovery=True,
        spark_master="sc://spark-connect:15002",
        completed_stages={"words": "file:///shared/ck/job-7/stages/words"},
        last_checkpoint={"kind": "stage", "stage": "words"},
    )

    assert LaunchDocument.from_json(launch.to_json()) == launch
    assert json.loads(launch.to_json())["schema"] == 1


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"attempt": 0}, "attempt"),
        ({"epoch": 0}, "epoch"),
        ({"deadman_timeout": 0}, "deadman_timeout"),
        ({"artifact_path": "relative/pipeline.py"}, "must be an absolute path"),
        ({"mode": "cleanup"}, "mode"),
        ({"job_id": "job 7"}, "invalid job id"),
        ({"spec": {"job_id": "job-8"}}, "differs from spec.job_id"),
        ({"schema": None}, "missing or invalid schema"),
    ],
)
def test_an_invalid_launch_document_is_refused_naming_the_problem(
    overrides: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(CorruptStateError, match=complaint):
        decode_launch(**overrides)


def test_a_field_a_newer_steward_added_is_read_past() -> None:
    # Another Steward process's document: an optional field this release does not know is
    # ignored (steward.wire.values), while the schema guards changes of meaning.
    assert decode_launch(surprise=1) == decode_launch()


def test_a_launch_document_from_a_newer_steward_is_refused() -> None:
    with pytest.raises(UnsupportedSchemaError):
        decode_launch(schema=2)


EVENTS = [
    StartedEvent(pid=10, pgid=10),
    ProgressEvent(progress={"rows": 3, "phase": "line\nbreak"}),
    CheckpointEvent(metadata={"kind": "stage", "stage": "s", "path": "/p", "stages": {}}),
    FinishedEvent(value={"nested": [1, 2.5, None, "x"]}),
    FinishedEvent(),
    FailedEvent(error=ErrorInfo(type="ValueError", message="bad", traceback="Traceback...")),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.event)
def test_every_event_is_one_line_that_decodes_to_itself(event: Any) -> None:
    line = encode_event(event)

    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_event(line) == event


def test_only_finished_and_failed_are_final() -> None:
    assert [is_final(e) for e in EVENTS] == [False, False, False, True, True, True]


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        (b"Traceback (most recent call last):", "not valid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"event": "started", "pid": 1, "pgid": 1}', "missing or invalid schema"),
        (b'{"schema": 1, "event": "exploded"}', "event"),
        (b'{"schema": 1, "event": "started", "pid": 1}', "pgid"),
    ],
)
def test_anything_but_an_event_is_refused(line: bytes, complaint: str) -> None:
    with pytest.raises(CorruptStateError, match=complaint):
        decode_event(line)


def test_an_event_from_a_newer_runner_is_refused() -> None:
    with pytest.raises(UnsupportedSchemaError):
        decode_event(b'{"schema": 3, "event": "started", "pid": 1, "pgid": 1}')


def test_iter_events_reads_a_stream_to_its_end_skipping_blank_lines() -> None:
    stream = io.BytesIO(b"".join(encode_event(e) for e in EVENTS[:2]) + b"\n")

    assert list(iter_events(stream)) == EVENTS[:2]


def test_completed_stages_come_from_the_latest_checkpoint_alone() -> None:
    stages = {"a": "/ck/stages/a", "b": "/ck/stages/b"}

    assert completed_stages_of(None) == {}
    assert completed_stages_of({"kind": "micro-batch", "batchId": 3}) == {}
    assert completed_stages_of({"kind": "micro-batch", "stages": stages}) == stages
    assert completed_stages_of({"kind": "stage", "stage": "b", "stages": stages}) == stages


def test_runner_command_is_the_documented_invocation() -> None:
    assert runner_command(7) == [sys.executable, "-m", RUNNER_MODULE, "--events-fd", "7"]
    assert runner_command(3, python="/opt/py")[0] == "/opt/py"


def test_error_type_names_are_qualified_except_for_builtins() -> None:
    assert error_type_name(KeyError) == "KeyError"
    assert error_type_name(ArtifactError) == "steward.wire.runner_protocol.ArtifactError"
