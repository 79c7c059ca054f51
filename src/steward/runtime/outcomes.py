"""An attempt's outcome as the runner reports it: the result value, and errors as ErrorInfo.

:func:`result_value` checks what ``main(ctx)`` returned (plain JSON, at most
:data:`~steward.wire.runner_protocol.MAX_RESULT_BYTES`); :func:`describe_error` turns any exception
(BaseException included) into the type, message and traceback of a ``failed`` event: the
message cut to 16 KiB and the traceback to 256 KiB, both valid UTF-8, the traceback starting in
the pipeline's code (the runner's and importlib's frames, the same for every failure, dropped).
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from types import TracebackType

from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import MAX_RESULT_BYTES, ResultError, RunnerError, error_type_name
from steward.wire.values import JsonValue

_RUNTIME_DIR = str(Path(__file__).resolve().parent)
_MAX_MESSAGE = 16 * 1024
_MAX_TRACEBACK = 256 * 1024


def result_value(value: object, what: str) -> JsonValue:
    """``value`` as plain JSON data, or ResultError naming what is wrong with it."""
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
        encoded.encode()  # lone surrogates pass json.dumps but cannot be sent
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeError is a ValueError
        raise ResultError(
            f"{what} returned a value of type {type(value).__qualname__} that is not"
            f" JSON-serialisable: {_clean(str(exc))}"
        ) from None
    if (size := len(encoded.encode())) > MAX_RESULT_BYTES:
        raise ResultError(
            f"{what} returned {size} bytes of JSON; the limit is {MAX_RESULT_BYTES}:"
            " write large results to storage and return where they are"
        )
    return json.loads(encoded)


def describe_error(exc: BaseException) -> ErrorInfo:
    """Type, message and (for exceptions from user code) the traceback of ``exc``."""
    if isinstance(exc, SystemExit):
        message = f"the pipeline called sys.exit({exc.code!r})"
    else:
        message = _safe_str(exc)
    trace = None if isinstance(exc, RunnerError) else _user_traceback(exc)
    return ErrorInfo(
        type=error_type_name(type(exc)),
        message=_truncate(_clean(message), _MAX_MESSAGE),
        traceback=None if trace is None else _truncate(_clean(trace), _MAX_TRACEBACK),
    )


def _clean(text: str) -> str:
    """``text`` with lone surrogates escaped: the events are UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _user_traceback(exc: BaseException) -> str:
    # Leading frames are the runner's and importlib's, the same for every failure: drop them
    # so the traceback starts in the pipeline.
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and _is_plumbing(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    try:
        return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
    except Exception:
        return f"{error_type_name(type(exc))}: <traceback could not be formatted>"


def _is_plumbing(filename: str) -> bool:
    return filename.startswith((_RUNTIME_DIR, "<frozen importlib"))


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__} with an unprintable message>"


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"
