"""The JSON models: every payload round-trips, and anything but a valid payload is rejected."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from steward.errors import CorruptStateError, UnsupportedSchemaError
from steward.wire.jobs import (
    Artifact,
    ArtifactKind,
    CheckpointSettings,
    ExponentialDelayRestart,
    FixedDelayRestart,
    JobGraph,
    JobGraphPointer,
    JobKind,
    JobSpec,
    NoRestart,
)
from steward.wire.records import (
    CheckpointPointer,
    CompletedCheckpoint,
    ContenderInfo,
    ErrorInfo,
    ExecutionLease,
    JobResultEntry,
    JobResultIndex,
    JobStatusRecord,
    LeaderInfo,
    LeadershipHistory,
    LeadershipTerm,
    TaskManagerInfo,
)
from steward.wire.states import CleanupStatus, JobState, TerminalState
from steward.wire.values import SCHEMA_VERSION, Payload, check_job_id

# ---------------------------------------------------------------- strategies

texts = st.text(max_size=40)
epochs = st.integers(min_value=1, max_value=2**63 - 1)
attempts = st.integers(min_value=0, max_value=10_000)
times = st.floats(min_value=0, max_value=4e9, allow_nan=False, allow_infinity=False)
seconds = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
positive_seconds = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)
sha256s = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
job_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}", fullmatch=True)
entrypoints = st.from_regex(r"([A-Za-z_][A-Za-z0-9_.]*:)?[A-Za-z_][A-Za-z0-9_]*", fullmatch=True)
string_maps = st.dictionaries(texts, texts, max_size=4)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)

restart_strategies = st.one_of(
    st.just(NoRestart()),
    st.builds(FixedDelayRestart, attempts=attempts, delay=seconds),
    st.builds(
        ExponentialDelayRestart,
        initial=positive_seconds,
        max=positive_seconds,
        multiplier=st.floats(min_value=1.0, max_value=100.0),
        max_attempts=attempts,
    ),
)

# Names and labels are shown on terminals: no control characters (wire.values.check_text).
printable = st.characters(exclude_categories=("Cc", "Cs", "Cf"))
labels = st.dictionaries(
    st.text(printable, min_size=1, max_size=40), st.text(printable, max_size=40), max_size=4
)

job_specs = st.builds(
    JobSpec,
    job_id=job_ids,
    name=st.text(printable, max_size=256),
    entrypoint=entrypoints,
    args=st.lists(texts, max_size=5),
    spark_conf=string_maps,
    slots=st.integers(min_value=1, max_value=1024),
    restart_strategy=restart_strategies,
    kind=st.sampled_from(JobKind),
    checkpoint=st.builds(CheckpointSettings, interval=positive_seconds),
    labels=labels,
)

artifacts = st.builds(
    Artifact,
    filename=st.text(min_size=1, max_size=255),
    kind=st.sampled_from(ArtifactKind),
    sha256=sha256s,
    data_b64=st.from_regex(r"[A-Za-z0-9+/]*={0,2}", fullmatch=True),
)

error_infos = st.builds(
    ErrorInfo, type=texts, message=texts, traceback=st.none() | st.text(max_size=200)
)

payloads: dict[type[Payload], st.SearchStrategy[Any]] = {
    LeaderInfo: st.builds(LeaderInfo, contender=texts, address=texts, epoch=epochs),
    ContenderInfo: st.builds(ContenderInfo, contender=texts, address=texts),
    JobGraph: st.builds(JobGraph, spec=job_specs, artifact=artifacts, submitted_at=times),
    JobGraphPointer: st.builds(JobGraphPointer, blob=texts, sha256=sha256s, epoch=epochs),
    JobResultEntry: st.builds(
        JobResultEntry,
        job_id=job_ids,
        state=st.sampled_from(TerminalState),
        status=st.sampled_from(CleanupStatus),
        value=json_values,
        error=st.none() | error_infos,
        submitted_at=st.none() | times,
        finished_at=times,
        cleaned_at=st.none() | times,
        epoch=epochs,
    ),
    CheckpointPointer: st.builds(
        CheckpointPointer,
        checkpoint_id=st.integers(min_value=1, max_value=10**18),
        blob=texts,
        sha256=sha256s,
        epoch=epochs,
    ),
    CompletedCheckpoint: st.builds(
        CompletedCheckpoint,
        job_id=job_ids,
        checkpoint_id=st.integers(min_value=1, max_value=10**18),
        attempt=attempts,
        created_at=times,
        metadata=st.dictionaries(texts, json_values, max_size=4),
    ),
    ExecutionLease: st.builds(ExecutionLease, taskmanager=texts, attempt=attempts, epoch=epochs),
    LeadershipHistory: st.builds(
        LeadershipHistory,
        terms=st.lists(
            st.builds(
                LeadershipTerm,
                epoch=epochs,
                contender=texts,
                address=texts,
                granted_at=times,
                ready_at=times,
                jobs=st.integers(min_value=0, max_value=10**6),
                adopted=st.integers(min_value=0, max_value=10**6),
            ),
            max_size=3,
        ),
    ),
    JobResultIndex: st.builds(
        JobResultIndex,
        state=st.sampled_from(TerminalState),
        status=st.sampled_from(CleanupStatus),
        sha256=sha256s,
        finished_at=times,
    ),
    TaskManagerInfo: st.builds(
        TaskManagerInfo, address=texts, slots=st.integers(min_value=0, max_value=1024)
    ),
    JobStatusRecord: st.builds(
        JobStatusRecord,
        job_id=job_ids,
        name=texts,
        state=st.sampled_from(JobState),
        submitted_at=times,
        updated_at=times,
        attempt_count=st.integers(min_value=0, max_value=10**6),
        restart_at=st.none() | times,
        epoch=epochs,
    ),
}

any_payload = st.one_of(*payloads.values())

# A minimal valid body per class, to break one thing at a time.
VALID: dict[type[Payload], dict[str, Any]] = {
    LeaderInfo: {"schema": 1, "contender": "jm-1", "address": "http://h:8081", "epoch": 3},
    ExecutionLease: {"schema": 1, "taskmanager": "tm-1", "attempt": 0, "epoch": 2},
    TaskManagerInfo: {"schema": 1, "address": "http://h:9000", "slots": 4},
    JobGraphPointer: {"schema": 1, "blob": "b", "sha256": "a" * 64, "epoch": 1},
}


def body(cls: type[Payload], **changes: Any) -> bytes:
    raw = dict(VALID[cls])
    for key, value in changes.items():
        if value is _DROP:
            raw.pop(key)
        else:
            raw[key] = value
    return json.dumps(raw).encode()


_DROP = object()


# ---------------------------------------------------------------- round trips


def test_every_payload_class_has_a_round_trip_strategy() -> None:
    # Guards the round-trip test below: a new payload class of the control plane's models
    # must get a strategy here (the runner's protocol payloads have their own round trips).
    modules = {"steward.wire.values", "steward.wire.jobs", "steward.wire.records"}
    assert set(payloads) == {c for c in _all_subclasses(Payload) if c.__module__ in modules}


def _all_subclasses(cls: type[Payload]) -> set[type[Payload]]:
    found: set[type[Payload]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


@given(any_payload)
def test_every_payload_round_trips_through_json(payload: Payload) -> None:
    # Given any valid payload
    # When encoding and decoding it with its own class
    data = payload.to_json()
    decoded = type(payload).from_json(data)
    # Then it is equal, and the encoding is plain JSON carrying the schema version
    assert decoded == payload
    assert json.loads(data)["schema"] == SCHEMA_VERSION
    assert type(payload).from_json(data.decode()) == payload


@given(job_specs)
def test_job_spec_keeps_its_restart_strategy_kind(spec: JobSpec) -> None:
    # Given a job graph with any restart strategy
    graph = JobGraph(
        spec=spec,
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    # When it round-trips
    decoded = JobGraph.from_json(graph.to_json())
    # Then the strategy comes back as the same class, with the same settings
    assert type(decoded.spec.restart_strategy) is type(spec.restart_strategy)
    assert decoded.spec.restart_strategy == spec.restart_strategy


@pytest.mark.parametrize(
    "strategy",
    [NoRestart(), FixedDelayRestart(attempts=5, delay=2.5), ExponentialDelayRestart(max=30.0)],
    ids=["none", "fixed-delay", "exponential-delay"],
)
def test_each_restart_strategy_is_written_with_its_kind(strategy: Any) -> None:
    # Given a spec with this strategy / When encoded / Then the JSON names the kind
    spec = JobSpec(job_id="job-1", restart_strategy=strategy)
    encoded = json.loads(spec.model_dump_json())
    assert encoded["restart_strategy"]["kind"] == strategy.kind
    assert JobSpec.model_validate(encoded).restart_strategy == strategy


def test_job_spec_defaults_match_the_design() -> None:
    spec = JobSpec(job_id="job-1")
    assert spec.entrypoint == "main"
    assert spec.slots == 1
    assert spec.kind is JobKind.BATCH
    assert spec.args == []
    assert isinstance(spec.restart_strategy, ExponentialDelayRestart)


# ---------------------------------------------------------------- rejection


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b'{"schema": 1,', b"\xff\xfe\x00", b"nul", "{'schema': 1}"],
    ids=["empty", "open-brace", "truncated", "not-utf8", "bad-literal", "python-repr"],
)
def test_malformed_json_is_corrupt_state(data: bytes | str) -> None:
    # Given bytes that are not JSON / When decoding / Then CorruptStateError names the kind
    with pytest.raises(CorruptStateError, match="leader info: not valid JSON"):
        LeaderInfo.from_json(data)


@pytest.mark.parametrize("data", [b"[]", b"1", b'"leader"', b"null", b"true", b'[{"schema":1}]'])
def test_json_that_is_not_an_object_is_corrupt_state(data: bytes) -> None:
    with pytest.raises(CorruptStateError, match="expected a JSON object"):
        LeaderInfo.from_json(data)


@pytest.mark.parametrize("cls", list(VALID))
def test_missing_schema_is_corrupt_state(cls: type[Payload]) -> None:
    # Given a body that is otherwise valid but has no "schema"
    # When decoding / Then it is rejected (and not as a newer schema)
    with pytest.raises(CorruptStateError, match="missing or invalid schema") as caught:
        cls.from_json(body(cls, schema=_DROP))
    assert not isinstance(caught.value, UnsupportedSchemaError)


@pytest.mark.parametrize("schema", [0, -1, "1", None, [1], 1.5])
def test_invalid_schema_is_corrupt_state(schema: Any) -> None:
    with pytest.raises(CorruptStateError, match="missing or invalid schema") as caught:
        LeaderInfo.from_json(body(LeaderInfo, schema=schema))
    assert not isinstance(caught.value, UnsupportedSchemaError)


def test_boolean_schema_is_corrupt_state() -> None:
    # Given "schema": true (equal to 1 in Python, but not the number 1 in JSON)
    # When decoding / Then it is rejected like any other invalid schema
    with pytest.raises(CorruptStateError, match="missing or invalid schema"):
        LeaderInfo.from_json(body(LeaderInfo, schema=True))


@pytest.mark.parametrize("cls", list(VALID))
@pytest.mark.parametrize("schema", [2, 17])
def test_future_schema_says_it_was_written_by_a_newer_steward(
    cls: type[Payload], schema: int
) -> None:
    # Given a payload from a newer Steward
    # When this version decodes it
    with pytest.raises(UnsupportedSchemaError) as caught:
        cls.from_json(body(cls, schema=schema, unknown_future_field="x"))
    # Then the error says so, and that it is a kind of corrupt state to callers that only care
    message = str(caught.value)
    assert f"schema {schema}" in message
    assert "newer Steward" in message
    assert isinstance(caught.value, CorruptStateError)


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (LeaderInfo, "epoch", "three"),
        (LeaderInfo, "epoch", 1.5),
        (LeaderInfo, "epoch", None),
        (LeaderInfo, "epoch", [3]),
        (LeaderInfo, "contender", 7),
        (LeaderInfo, "address", {"host": "h"}),
        (ExecutionLease, "attempt", "first"),
        (TaskManagerInfo, "slots", "many"),
        (JobGraphPointer, "sha256", 12345),
    ],
)
def test_wrong_types_are_corrupt_state_naming_the_field(
    cls: type[Payload], field: str, value: Any
) -> None:
    # Given a body with one field of the wrong type
    # When decoding / Then the error names that field
    with pytest.raises(CorruptStateError, match=f": {field}: ") as caught:
        cls.from_json(body(cls, **{field: value}))
    assert not isinstance(caught.value, UnsupportedSchemaError)


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (LeaderInfo, "epoch", "3"),
        (LeaderInfo, "epoch", True),
        (TaskManagerInfo, "slots", "4"),
        (ExecutionLease, "attempt", False),
    ],
)
def test_coercible_wrong_types_are_corrupt_state(
    cls: type[Payload], field: str, value: Any
) -> None:
    # Given a numeric field written as a string or a boolean (a wrong JSON type, even though
    # Python could coerce it): decoding is strict, per the model's contract
    # When decoding / Then it is rejected
    with pytest.raises(CorruptStateError, match=f": {field}: "):
        cls.from_json(body(cls, **{field: value}))


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (LeaderInfo, "epoch", 0),
        (ExecutionLease, "attempt", -1),
        (TaskManagerInfo, "slots", -1),
        (JobGraphPointer, "sha256", "A" * 64),
        (JobGraphPointer, "sha256", "a" * 63),
    ],
)
def test_out_of_range_values_are_corrupt_state(cls: type[Payload], field: str, value: Any) -> None:
    with pytest.raises(CorruptStateError, match=f": {field}: "):
        cls.from_json(body(cls, **{field: value}))


@pytest.mark.parametrize("cls", list(VALID))
def test_missing_required_field_is_corrupt_state(cls: type[Payload]) -> None:
    for field in set(VALID[cls]) - {"schema"}:
        with pytest.raises(CorruptStateError, match=f": {field}: "):
            cls.from_json(body(cls, **{field: _DROP}))


@given(any_payload, st.text(min_size=1, max_size=20))
def test_an_unknown_field_another_process_wrote_is_ignored_but_refused_from_a_person(
    payload: Payload, name: str
) -> None:
    # Given any valid payload with one extra field added (a newer release's optional field)
    raw = json.loads(payload.to_json())
    if name in raw or name in type(payload).model_fields:
        return
    raw[name] = "surprise"
    # When another Steward process's record or message is decoded / Then the field is ignored
    assert type(payload).from_json(json.dumps(raw)) == payload
    # And the same document sent by a person (a request body) is refused, naming the field
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        type(payload).model_validate(raw)


def test_an_unknown_nested_field_is_ignored_too() -> None:
    # Given a job graph whose spec carries a field this release does not know
    graph = JobGraph(
        spec=JobSpec(job_id="job-1"),
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    raw = json.loads(graph.to_json())
    raw["spec"]["preemptible"] = True
    # When decoding / Then it reads as the graph without it; a wrong known field still fails
    assert JobGraph.from_json(json.dumps(raw)) == graph
    raw["spec"]["name"] = 5
    with pytest.raises(CorruptStateError, match=r"job graph: spec\.name: "):
        JobGraph.from_json(json.dumps(raw))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "restart_strategy", "kind"), "forever"),
        (("spec", "restart_strategy"), {"kind": "fixed-delay", "attempts": -1}),
        (("spec", "job_id"), "../etc/passwd"),
        (("spec", "entrypoint"), "module:fn:extra"),
        (("spec", "slots"), 0),
        (("spec", "kind"), "interactive"),
        (("artifact", "kind"), "jar"),
    ],
)
def test_invalid_nested_job_graph_values_are_corrupt_state(
    path: tuple[str, ...], value: Any
) -> None:
    graph = JobGraph(
        spec=JobSpec(job_id="job-1", restart_strategy=FixedDelayRestart()),
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    raw = json.loads(graph.to_json())
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(CorruptStateError, match=r"^job graph: (spec|artifact)\."):
        JobGraph.from_json(json.dumps(raw))


# ---------------------------------------------------------------- job ids


@given(job_ids)
def test_valid_job_ids_are_accepted(job_id: str) -> None:
    assert check_job_id(job_id) == job_id


@pytest.mark.parametrize(
    "job_id", ["", "-leading-dash", ".hidden", "a/b", "a b", "x" * 129, "job\u00e9", "job\n"]
)
def test_invalid_job_ids_are_rejected(job_id: str) -> None:
    # Given an id that could not be a znode or file name of its own
    # When checking it / Then it is rejected (a trailing newline too)
    with pytest.raises(ValueError, match="invalid job id"):
        check_job_id(job_id)


def test_a_result_keeps_its_last_attempts_without_tracebacks() -> None:
    from steward.wire.records import RESULT_ATTEMPTS_KEPT, AttemptRecord, attempts_to_keep
    from steward.wire.states import AttemptState

    cause = ErrorInfo(type="ValueError", message="bad row", traceback="Traceback ...")
    attempts = [
        AttemptRecord(number=n, taskmanager="tm-1", epoch=1, state=AttemptState.FAILED, cause=cause)
        for n in range(1, RESULT_ATTEMPTS_KEPT + 3)
    ]
    kept = attempts_to_keep(attempts)
    assert [a.number for a in kept] == list(range(3, RESULT_ATTEMPTS_KEPT + 3))
    assert all(a.cause is not None and a.cause.message == "bad row" for a in kept)
    assert all(a.cause is not None and a.cause.traceback is None for a in kept)
    assert attempts[0].cause is not None and attempts[0].cause.traceback  # not changed in place
    entry = JobResultEntry(
        job_id="j", state=TerminalState.FAILED, finished_at=1.0, epoch=1, attempts=kept
    )
    assert JobResultEntry.from_json(entry.to_json()).attempts == kept


def test_a_result_written_before_attempts_were_kept_still_reads() -> None:
    old = (
        b'{"schema":1,"job_id":"j","state":"FINISHED","status":"CLEAN","value":1,"error":null,'
        b'"submitted_at":null,"finished_at":1.0,"cleaned_at":2.0,"epoch":1}'
    )
    entry = JobResultEntry.from_json(old)
    assert (entry.attempts, entry.attempt_count, entry.name) == ([], 0, "")
