"""A job's ``timeout`` and ``env`` in the spec (steward.wire.job_options): what is accepted,
what is refused with a sentence naming it, and that older stored graphs still load."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from steward.wire.job_options import (
    MAX_ENV_CHARS,
    MAX_ENV_VARS,
    MAX_TIMEOUT,
    TIMEOUT_ERROR_TYPE,
    deadline,
    describe_timeout,
    timeout_error,
)
from steward.wire.jobs import Artifact, ArtifactKind, JobGraph, JobSpec


@pytest.mark.parametrize(
    ("written", "seconds"),
    [
        (60, 60.0),
        (1.5, 1.5),
        ("90s", 90.0),
        ("45m", 2700.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("60", 60.0),
        ("30d", MAX_TIMEOUT),
        (None, None),
    ],
)
def test_a_timeout_is_seconds_or_a_duration(written: object, seconds: float | None) -> None:
    assert JobSpec(job_id="j", timeout=written).timeout == seconds


@pytest.mark.parametrize(
    ("written", "says"),
    [
        (0, "greater than 0"),
        (-5, "greater than 0"),
        ("31d", "less than or equal"),
        ("1y", "is not a duration"),
        (True, "not true/false"),
        ("soon", "is not a duration"),
        (float("nan"), "less than or equal"),
    ],
)
def test_a_bad_timeout_is_refused_with_its_reason(written: object, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        JobSpec(job_id="j", timeout=written)


def test_the_deadline_counts_from_the_submission() -> None:
    assert deadline(1000.0, 60.0) == 1060.0
    assert deadline(1000.0, None) is None
    assert deadline(None, 60.0) is None


def test_the_timeout_error_says_timeout_and_is_permanent() -> None:
    error = timeout_error(5400.0)
    assert error.type == TIMEOUT_ERROR_TYPE and error.permanent
    assert error.message.startswith("TIMEOUT") and "90m" in error.message
    assert describe_timeout(7200.0) == "2h" and describe_timeout(2.5) == "2.5s"


def test_env_with_portable_names_is_accepted() -> None:
    env = {"GREETING": "hello world", "_x1": "", "DB_URL": "jdbc:x://h/db?a=b"}
    assert JobSpec(job_id="j", env=env).env == env


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"1A": "x"}, "letters, digits"),
        ({"A B": "x"}, "letters, digits"),
        ({"A=B": "x"}, "letters, digits"),
        ({"": "x"}, "letters, digits"),
        ({"X" * 129: "x"}, "letters, digits"),
        ({"STEWARD_ATTEMPT_TOKEN": "x"}, "Steward's"),
        ({"steward_token": "x"}, "Steward's"),
        ({"A": "a\0b"}, "NUL"),
        ({f"V{i}": "x" for i in range(MAX_ENV_VARS + 1)}, f"at most {MAX_ENV_VARS}"),
        ({"BIG": "x" * MAX_ENV_CHARS}, f"at most {MAX_ENV_CHARS}"),
    ],
)
def test_bad_env_is_refused_with_its_reason(env: dict[str, str], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        JobSpec(job_id="j", env=env)


def test_a_graph_stored_before_timeout_and_env_loads_without_them() -> None:
    graph = JobGraph(
        spec=JobSpec(job_id="old"),
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    raw = json.loads(graph.to_json())
    del raw["spec"]["timeout"], raw["spec"]["env"]
    loaded = JobGraph.from_json(json.dumps(raw))
    assert loaded.spec.timeout is None and loaded.spec.env == {}


def test_a_stored_graph_keeps_its_timeout_and_env() -> None:
    spec = JobSpec(job_id="new", timeout="2h", env={"A": "b"})
    graph = JobGraph(
        spec=spec,
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    loaded = JobGraph.from_json(graph.to_json())
    assert (loaded.spec.timeout, loaded.spec.env) == (7200.0, {"A": "b"})
