"""A runner's events pipe, read on a thread of its own (the parent's side of
:mod:`steward.wire.runner_protocol`): each event decoded, the ones the parent waits for kept
(``ready``, ``started``, the final one), and every one handed to the owner's callback.

A malformed line is counted and skipped, an event after the final one is ignored: a pipeline
that writes on the inherited descriptor cannot make the parent believe two outcomes. The read
ends at EOF, once every writer of the pipe (the runner and whatever inherited the descriptor)
is gone.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import IO

from steward.errors import StewardError
from steward.wire.runner_protocol import (
    FailedEvent,
    FinalEvent,
    FinishedEvent,
    ReadyEvent,
    RunnerEvent,
    StartedEvent,
    decode_event,
)

log = logging.getLogger(__name__)

OnEvent = Callable[[RunnerEvent], None]


class RunnerEvents:
    """What one runner reported so far, and the thread that reads it."""

    def __init__(self, name: str, on_event: OnEvent | None) -> None:
        self.name = name
        """For log lines: the attempt (``<job>-<attempt>``), or ``spare``."""
        self.on_event = on_event
        self.ready: ReadyEvent | None = None
        self.started: StartedEvent | None = None
        self.final: FinalEvent | None = None
        self.bad_lines = 0
        self.closed = threading.Event()
        """Set once every writer of the pipe is gone and every event was handed on."""
        self._ready_set = threading.Event()

    def read(self, fd: int, on_close: Callable[[], None]) -> None:
        """Read the pipe's read end ``fd`` on a daemon thread until EOF; then ``on_close``."""
        thread = threading.Thread(
            target=self._read, args=(fd, on_close), name=f"{self.name}-events", daemon=True
        )
        thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Whether a ``ready`` event came within ``timeout`` (False once the pipe closed)."""
        return self._ready_set.wait(timeout) and self.ready is not None

    def _read(self, fd: int, on_close: Callable[[], None]) -> None:
        try:
            with os.fdopen(fd, "rb") as stream:
                self._consume(stream)
        except Exception:
            log.exception("reading runner events failed job=%s", self.name)
        finally:
            on_close()
            self.closed.set()
            self._ready_set.set()  # wake waiters: no ready event can come any more

    def _consume(self, stream: IO[bytes]) -> None:
        for line in stream:
            if not line.strip():
                continue
            try:
                event = decode_event(line)
            except StewardError as exc:
                self.bad_lines += 1
                log.warning("malformed runner event ignored job=%s cause=%s", self.name, exc)
                continue
            if self.final is not None:
                log.warning("runner event after the final one ignored job=%s", self.name)
                continue
            self._keep(event)
            if self.on_event is not None:
                try:
                    self.on_event(event)
                except Exception:
                    log.exception("runner event callback failed job=%s", self.name)

    def _keep(self, event: RunnerEvent) -> None:
        if isinstance(event, ReadyEvent):
            self.ready = event
            self._ready_set.set()
        elif isinstance(event, StartedEvent):
            self.started = event
        elif isinstance(event, FinishedEvent | FailedEvent):
            self.final = event
