"""Running a spark-submit script as ``python app.py ARGS`` would.

The script runs in the runner's main thread as module ``__main__``, with
``sys.argv == ["app.py", *ARGS]`` and its folder first on ``sys.path``; its output goes
where the runner's goes (the attempt's log). How it ended is its exit status, as for
``python``: falling off the end is 0; ``sys.exit(n)`` is ``n``; ``sys.exit("message")``
prints the message to stderr and is 1. An uncaught exception propagates to the runner,
which reports it with its traceback.

A non-zero status becomes a :class:`ScriptExitError` whose message ends with the tail of
what the script wrote to ``sys.stderr`` (its usage message, typically): :class:`StderrTail`
keeps the last few KiB on the way through.
"""

from __future__ import annotations

import builtins
import collections
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from steward.wire.runner_protocol import RunnerError

TAIL_BYTES = 4096


class ScriptExitError(RunnerError):
    """The script ended with a non-zero exit status."""

    def __init__(self, status: object, stderr_tail: str) -> None:
        message = f"the script exited with status {status}"
        if stderr_tail.strip():
            message += f"; the end of its stderr:\n{stderr_tail.rstrip()}"
        super().__init__(message)
        self.status = status


class StderrTail:
    """A text stream that writes through to ``stream`` and keeps the last ``limit`` chars."""

    def __init__(self, stream: TextIO, limit: int = TAIL_BYTES) -> None:
        self._stream = stream
        self._limit = limit
        self._chunks: collections.deque[str] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        with self._lock:
            self._chunks.append(text[-self._limit :])
            self._size += len(self._chunks[-1])
            while self._size - len(self._chunks[0]) >= self._limit:
                self._size -= len(self._chunks.popleft())
        return written

    def tail(self) -> str:
        with self._lock:
            return "".join(self._chunks)[-self._limit :]

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty ...
        return getattr(self._stream, name)


def load(path: Path) -> types.CodeType:
    """The script compiled; SyntaxError (or ValueError for NUL bytes) if it cannot be."""
    return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)


def run(path: Path, argv: Sequence[str], code: types.CodeType | None = None) -> None:
    """Run the script at ``path`` (compiled: ``code``) as ``__main__`` with ``argv``;
    ScriptExitError if it exits with a non-zero status. Its exceptions propagate unchanged."""
    code = code or load(path)
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    module.__dict__["__builtins__"] = builtins
    tail = StderrTail(sys.stderr)
    saved = sys.modules["__main__"], sys.argv, sys.stderr
    sys.modules["__main__"], sys.argv, sys.stderr = module, list(argv), tail
    sys.path.insert(0, str(path.parent))
    try:
        exec(code, module.__dict__)
    except SystemExit as exc:
        status = exit_status(exc.code, tail)
        if status != 0:
            raise ScriptExitError(
                exc.code if isinstance(exc.code, int) else status, tail.tail()
            ) from None
    finally:
        sys.modules["__main__"], sys.argv, sys.stderr = saved


def exit_status(code: object, stderr: StderrTail | TextIO) -> int:
    """The status ``python`` exits with for ``sys.exit(code)`` (printing a message code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    stderr.write(f"{code}\n")
    return 1
