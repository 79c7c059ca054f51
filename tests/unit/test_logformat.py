"""log.format = json: one JSON object per record, with the ids the message names."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from steward import logformat


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """The root logger writes JSON into a buffer for the test, as configure() sets it up."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    buffer = io.StringIO()
    root.handlers = [logging.StreamHandler(buffer)]
    root.setLevel(logging.INFO)
    logformat.configure(logformat.JSON, "jobmanager:jm-1")
    yield buffer
    root.handlers, root.level = saved_handlers, saved_level


def records(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_a_record_carries_the_ids_its_message_names(lines: io.StringIO) -> None:
    logging.getLogger("steward.x").info(
        "attempt ended job=%s attempt=%d epoch=%d tm=%s", "etl-7", 3, 12, "tm-2"
    )

    (record,) = records(lines)
    assert record["message"] == "attempt ended job=etl-7 attempt=3 epoch=12 tm=tm-2"
    assert (record["job"], record["attempt"], record["epoch"], record["taskmanager"]) == (
        "etl-7",
        3,
        12,
        "tm-2",
    )
    assert (record["level"], record["logger"], record["process"]) == (
        "INFO",
        "steward.x",
        "jobmanager:jm-1",
    )
    assert isinstance(record["pid"], int) and str(record["ts"]).endswith("Z")


def test_quoted_values_newlines_and_non_ascii_stay_one_line(lines: io.StringIO) -> None:
    logging.getLogger("steward.x").warning(
        "cleanup failed job=%r error=%s", "tâche-1", 'line one\nline "two"'
    )

    assert len(lines.getvalue().splitlines()) == 1
    (record,) = records(lines)
    assert record["job"] == "tâche-1"
    assert record["message"].endswith('line one\nline "two"')  # type: ignore[union-attr]
    assert "attempt" not in record and "epoch" not in record


def _fail() -> None:
    raise ValueError("boom")


def test_an_exception_is_kept_whole_in_its_record(lines: io.StringIO) -> None:
    try:
        _fail()
    except ValueError:
        logging.getLogger("steward.x").exception("hook failed job=%s", "j1")

    (record,) = records(lines)
    assert "Traceback" in str(record["exc"]) and "ValueError: boom" in str(record["exc"])


def test_a_runner_names_its_own_job_and_attempt(lines: io.StringIO) -> None:
    logformat.configure(logformat.JSON, "runner", fields={"job": "j9", "attempt": 2})
    logging.getLogger("steward.runtime").info("pipeline returned")

    (record,) = records(lines)
    assert (record["process"], record["job"], record["attempt"]) == ("runner", "j9", 2)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("job=a attempt=x epoch=3", {"job": "a", "epoch": 3}),  # a non-number attempt: left out
        ("old_job=a subjob=b", {}),  # only whole keys
        ("job='a b' (tm=tm-1)", {"job": "a b", "taskmanager": "tm-1"}),
        ("job=a job=b", {"job": "a"}),  # the first one
    ],
)
def test_fields_are_read_from_key_value_pairs(message: str, expected: dict[str, object]) -> None:
    assert logformat.fields_of(message) == expected


def test_text_stays_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logformat.ENV_VAR, raising=False)
    assert logformat.from_environment() == logformat.TEXT
    monkeypatch.setenv(logformat.ENV_VAR, "JSON")
    assert logformat.from_environment() == logformat.JSON
    monkeypatch.setenv(logformat.ENV_VAR, "xml")
    assert logformat.from_environment() == logformat.TEXT
