"""The runner's end of the events pipe: one writer shared by every thread of an attempt.

The main thread (started, the final event), user threads (``ctx.report_progress``) and
py4j callback threads (micro-batch checkpoints) all write through one :class:`EventChannel`,
which keeps their lines whole and in one order, refuses anything after the final event, and
never lets a broken pipe reach user code. :class:`MemorySink` collects events in memory, for
running a pipeline's code under a :class:`~steward.runtime.context.JobContext` in a test.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Protocol

from steward.wire.runner_protocol import BaseEvent, encode_event, is_final

log = logging.getLogger(__name__)


class EventSink(Protocol):
    """Where a :class:`~steward.runtime.context.JobContext` sends its events."""

    def emit(self, event: BaseEvent) -> bool:
        """Send ``event``; False when it was dropped (after the final event, pipe gone)."""
        ...


class EventChannel:
    """Writes events as JSON lines to a file descriptor; thread-safe, final event last."""

    def __init__(self, fd: int) -> None:
        os.fstat(fd)  # fail here, before any user code runs, if the fd is not open
        # Nothing the pipeline starts may hold the pipe open: the parent must see EOF when the
        # runner is gone, whatever survives it.
        os.set_inheritable(fd, False)
        self._fd = fd
        self._lock = threading.Lock()
        self._closed = False
        # A pipeline that calls os.fork() must not make the child report a second outcome.
        self._owner_pid = os.getpid()

    @property
    def owner_pid(self) -> int:
        """The runner's pid: events from any other process (an os.fork() child) are dropped."""
        return self._owner_pid

    @property
    def closed(self) -> bool:
        return self._closed

    def emit(self, event: BaseEvent) -> bool:
        data = encode_event(event)
        with self._lock:
            if self._closed or os.getpid() != self._owner_pid:
                log.debug("event dropped (channel closed): %s", event.model_dump_json())
                return False
            if is_final(event):
                self._closed = True
            try:
                _write_all(self._fd, data)
            except OSError as exc:
                # The parent is gone; the dead-man's switch ends this process shortly.
                self._closed = True
                log.warning("events pipe broken (%s); dropping further events", exc)
                return False
        return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class MemorySink:
    """Keeps events in a list, with the same closing rule as :class:`EventChannel`."""

    def __init__(self) -> None:
        self.events: list[BaseEvent] = []
        self._lock = threading.Lock()

    def emit(self, event: BaseEvent) -> bool:
        with self._lock:
            if self.events and is_final(self.events[-1]):
                return False
            self.events.append(event)
        return True
