"""An attempt's log on this TaskManager: which file, whether it is still written, and its
bytes as a stream.

The file is ``<taskmanager.workdir>/<tm-id>/<job-id>/<attempt>/runner.log``
(:func:`steward.taskmanager.preparation.attempt_log`). It stays after the attempt ended until
``taskmanager.workdir.retention`` removes its folder (:mod:`steward.taskmanager.workdir_cleaner`);
this module remembers which folders the retention removed and when (:class:`RemovedLogs`), so
a request for such a log is answered "gone, removed by the retention at ..." (410), and one for
an attempt that never ran here "not found" (404). That memory lives as long as the process: a
restarted TaskManager answers 404 for logs an earlier run removed.

A stream reads the file in blocks of :data:`BLOCK` bytes (a 100 MB log never sits in memory),
from a byte offset or the start of its last N lines. Following it, it keeps sending what is
appended, polling every :data:`POLL` seconds, until the attempt has ended (its whole process
group is gone) and the file stopped growing: the log capper, which outlives the group, may
write its last lines a moment later. If the capper shortened the file under a follower
(``taskmanager.attempt-log.max-size``), the follower goes on from the new end.
"""

from __future__ import annotations

import contextlib
import enum
import os
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.to_thread

from steward.store.log_archive import last_lines_start
from steward.taskmanager.preparation import LOG_FILE
from steward.wire.logs import MAX_ATTEMPT
from steward.wire.values import check_job_id

BLOCK = 256 * 1024
POLL = 0.2
"""Seconds between two looks at a followed file that had nothing new."""
_SETTLE_POLLS = 2
"""Empty reads after the attempt ended before a follower stops (the capper's last lines)."""
_REMEMBERED = 10_000
"""Removed logs remembered (the oldest are forgotten first): 404 instead of 410 beyond."""


class Phase(enum.Enum):
    """An attempt as this TaskManager knows it, for its log."""

    RUNNING = "running"
    """Starting or running: its log may still grow."""
    ENDED = "ended"
    """Ended, forgotten, or of an earlier run of this TaskManager: its log is complete."""


PhaseOf = Callable[[str, int], Phase]


class LogUnavailableError(Exception):
    """Why a log cannot be served: an HTTP status, an error code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class RemovedLogs:
    """Which attempts' folders the retention removed, and when (epoch seconds). Thread-safe."""

    def __init__(self, limit: int = _REMEMBERED) -> None:
        self._limit = limit
        self._removed: OrderedDict[tuple[str, int], float] = OrderedDict()
        self._lock = threading.Lock()

    def note(self, job_id: str, attempt: int, at: float | None = None) -> None:
        with self._lock:
            self._removed[(job_id, attempt)] = time.time() if at is None else at
            self._removed.move_to_end((job_id, attempt))
            while len(self._removed) > self._limit:
                self._removed.popitem(last=False)

    def when(self, job_id: str, attempt: int) -> float | None:
        with self._lock:
            return self._removed.get((job_id, attempt))


@dataclass(frozen=True)
class LogRequest:
    """One checked request: the file, where to start, and whether to follow."""

    path: Path
    job_id: str
    attempt: int
    start: int
    follow: bool


class AttemptLogs:
    """The logs of the attempts under ``root`` (``<taskmanager.workdir>/<tm-id>``)."""

    def __init__(self, root: Path, phase_of: PhaseOf, removed: RemovedLogs) -> None:
        self.root = root.resolve()
        self._phase_of = phase_of
        self.removed = removed
        self._closing = threading.Event()

    def close(self) -> None:
        """The TaskManager stops: followers end their streams at their next poll."""
        self._closing.set()

    def path(self, job_id: str, attempt: int) -> Path:
        """The log file of an attempt; 400 for an id or number that cannot name one."""
        try:
            check_job_id(job_id)
        except ValueError as exc:
            raise LogUnavailableError(400, "bad_request", str(exc)) from None
        if not 1 <= attempt <= MAX_ATTEMPT:
            raise LogUnavailableError(400, "bad_request", f"invalid attempt number {attempt}")
        path = (self.root / job_id / str(attempt) / LOG_FILE).resolve()
        if not path.is_relative_to(self.root):  # never, with a checked id: a second lock
            raise LogUnavailableError(400, "bad_request", f"invalid job id {job_id!r}")
        return path

    def open(
        self, job_id: str, attempt: int, offset: int, tail: int | None, follow: bool
    ) -> LogRequest:
        """Check that the log exists (404, 410) and find where to start reading it."""
        path = self.path(job_id, attempt)
        running = self._phase_of(job_id, attempt) is Phase.RUNNING
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            if running:  # started, its log not made yet: nothing so far
                return LogRequest(path, job_id, attempt, 0, follow)
            raise self._missing(job_id, attempt) from None
        except OSError as exc:
            raise LogUnavailableError(
                500, "unreadable", f"cannot read the log: {exc.strerror}"
            ) from None
        start = min(offset, size)
        if tail is not None:
            with path.open("rb") as log:
                start = max(start, last_lines_start(log, tail))
        return LogRequest(path, job_id, attempt, start, follow)

    def _missing(self, job_id: str, attempt: int) -> LogUnavailableError:
        removed_at = self.removed.when(job_id, attempt)
        if removed_at is not None:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(removed_at))
            return LogUnavailableError(
                410,
                "log_removed",
                f"the log of attempt {attempt} of job {job_id} was removed at {when} by"
                " taskmanager.workdir.retention (its folder is removed that long after the"
                " attempt ended)",
            )
        return LogUnavailableError(
            404,
            "log_not_found",
            f"attempt {attempt} of job {job_id} has no log on this TaskManager",
        )

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        """The log's bytes from ``request.start``; following, until the attempt ended and
        the file stopped growing (or the TaskManager stops, or the client goes away)."""
        log = await self._opened(request)
        if log is None:
            return
        with log:
            await anyio.to_thread.run_sync(log.seek, request.start)
            settled = 0
            while True:
                block = await anyio.to_thread.run_sync(log.read, BLOCK)
                if block:
                    settled = 0
                    yield block
                    continue
                if not request.follow or self._closing.is_set():
                    return
                if self._phase_of(request.job_id, request.attempt) is Phase.ENDED:
                    settled += 1
                    if settled > _SETTLE_POLLS:
                        return
                _past_end(log)
                await anyio.sleep(POLL)

    async def _opened(self, request: LogRequest) -> BinaryIO | None:
        """The file open for reading; following an attempt whose log is not made yet, once
        it is (None if the attempt ends first)."""
        while True:
            with contextlib.suppress(FileNotFoundError):
                return request.path.open("rb")
            ended = self._phase_of(request.job_id, request.attempt) is Phase.ENDED
            if not request.follow or ended or self._closing.is_set():
                return None
            await anyio.sleep(POLL)


def _past_end(log: BinaryIO) -> None:
    """The capper truncated the file below where we read: go on from its new end."""
    size = os.fstat(log.fileno()).st_size
    if log.tell() > size:
        log.seek(size)
