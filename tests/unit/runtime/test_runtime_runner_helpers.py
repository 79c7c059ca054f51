"""How the runner describes failures and checks return values."""

from __future__ import annotations

import pytest

from steward.runtime.outcomes import describe_error, result_value
from steward.wire.runner_protocol import ArtifactError, AttemptCancelled, ResultError


def _throw(exc: BaseException) -> None:
    raise exc


def raised(exc: BaseException) -> BaseException:
    """``exc`` with a traceback, as the runner gets it."""
    try:
        _throw(exc)
    except BaseException as caught:
        return caught
    raise AssertionError("not raised")


def test_a_user_exception_keeps_type_message_and_traceback() -> None:
    error = describe_error(raised(ValueError("bad row 7")))

    assert (error.type, error.message) == ("ValueError", "bad row 7")
    assert error.traceback is not None
    assert error.traceback.strip().endswith("ValueError: bad row 7")
    assert "in _throw" in error.traceback


def test_sys_exit_is_described_as_such() -> None:
    assert describe_error(raised(SystemExit(0))).message == "the pipeline called sys.exit(0)"
    assert (
        describe_error(raised(SystemExit("bye"))).message == "the pipeline called sys.exit('bye')"
    )


def test_the_runner_own_errors_carry_no_traceback() -> None:
    error = describe_error(raised(ArtifactError("no main")))

    assert error.type == "steward.wire.runner_protocol.ArtifactError"
    assert error.traceback is None


def test_a_cancel_is_named() -> None:
    error = describe_error(raised(AttemptCancelled("SIGTERM")))

    assert error.type == "steward.wire.runner_protocol.AttemptCancelled"


def test_huge_messages_are_cut_in_the_middle() -> None:
    error = describe_error(raised(RuntimeError("a" * 50_000 + "END")))

    assert len(error.message) < 17_000
    assert error.message.endswith("END") and "characters cut" in error.message


def test_an_unprintable_exception_still_has_a_message() -> None:
    class MuteError(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert describe_error(raised(MuteError())).message == "<MuteError with an unprintable message>"


def test_result_values_are_returned_as_plain_json() -> None:
    assert result_value({"a": (1, 2), 3: None}, "main") == {"a": [1, 2], "3": None}
    assert result_value(None, "main") is None


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ({1, 2}, "value of type set that is not JSON-serialisable"),
        (float("inf"), "value of type float that is not JSON-serialisable"),
        ("x" * (1024 * 1024 + 1), "the limit is 1048576"),
    ],
)
def test_result_values_that_are_not_json_or_too_big_are_refused(
    value: object, complaint: str
) -> None:
    with pytest.raises(ResultError, match=complaint):
        result_value(value, "main")


def test_a_circular_value_is_refused() -> None:
    circular: list[object] = []
    circular.append(circular)

    with pytest.raises(ResultError, match="value of type list"):
        result_value(circular, "initialize")
