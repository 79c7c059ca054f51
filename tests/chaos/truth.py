"""Ground truth independent of Steward: what the pipelines really did, and when they died.

The pipelines (:mod:`chaos.chaos_pipeline`) append ``start``/``stop`` lines to a log outside
Steward's stores. A runner killed by SIGKILL writes no ``stop``; :class:`DeathWatcher`
records when its process ended, from a pidfd (the kernel wakes us when the process exits, so
the time is exact up to our own scheduling), and :func:`still_running` asks the kernel whether
an attempt's lock is still held.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.chaos_pipeline import LOCKS, TRUTH_FILE


@dataclass
class Attempt:
    """One process that ran a job's pipeline, as the ground truth saw it."""

    job: str
    attempt: int
    pid: int
    start_t: float
    start_wall: float
    stop_t: float | None = None
    stop_wall: float | None = None
    value: Any = None
    death_t: float | None = None
    """When the process was seen gone (exact for pidfd-watched processes)."""
    death_exact: bool = True
    """False when the process was already gone when its start line was read: ``death_t``
    is then only an upper bound."""

    @property
    def end_t(self) -> float | None:
        """When the attempt's work ended: its stop line, else its death; None if unknown."""
        if self.stop_t is not None:
            return self.stop_t
        return self.death_t

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "attempt": self.attempt,
            "pid": self.pid,
            "start_t": self.start_t,
            "start_wall": self.start_wall,
            "stop_t": self.stop_t,
            "death_t": self.death_t,
            "death_exact": self.death_exact,
        }


@dataclass
class GroundTruth:
    """Every attempt seen, by (job, pid); lines the reader could not parse are kept."""

    attempts: dict[tuple[str, int], Attempt] = field(default_factory=dict)
    bad_lines: list[str] = field(default_factory=list)

    def of_job(self, job: str) -> list[Attempt]:
        return sorted((a for a in self.attempts.values() if a.job == job), key=lambda a: a.start_t)

    def apply(self, record: dict[str, Any]) -> Attempt | None:
        """Fold one log line in; returns the attempt when the line was a ``start``."""
        key = (str(record["job"]), int(record["pid"]))
        if record["event"] == "start":
            attempt = Attempt(
                job=key[0],
                attempt=int(record["attempt"]),
                pid=key[1],
                start_t=float(record["t"]),
                start_wall=float(record["wall"]),
            )
            self.attempts[key] = attempt
            return attempt
        found = self.attempts.get(key)
        if found is None:
            self.bad_lines.append(f"stop without start: {record}")
            return None
        found.stop_t = float(record["t"])
        found.stop_wall = float(record["wall"])
        found.value = record.get("value")
        return None


def prepare(truth_dir: Path) -> None:
    (truth_dir / LOCKS).mkdir(parents=True, exist_ok=True)
    (truth_dir / TRUTH_FILE).touch()


def still_running(truth_dir: Path, attempt: Attempt) -> bool:
    """Whether the attempt's process still holds its lock (the kernel drops it at death)."""
    path = truth_dir / LOCKS / f"{attempt.job}.{attempt.attempt}.{attempt.pid}.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


class DeathWatcher:
    """Tails the truth log and records the exit time of every attempt's process.

    One thread: it reads new lines every ``interval`` and waits on the pidfds of the running
    attempts in between, so an exit is noticed the moment it happens.
    """

    def __init__(self, truth_dir: Path, interval: float = 0.05) -> None:
        self.truth_dir = truth_dir
        self.truth = GroundTruth()
        self.lock = threading.Lock()
        self._interval = interval
        self._offset = 0
        self._partial = b""
        self._poll = select.poll()
        self._pidfds: dict[int, Attempt] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="death-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.read_new()
        for fd in list(self._pidfds):
            self._close(fd)

    def running(self) -> list[Attempt]:
        """Attempts whose process has not been seen to exit yet."""
        with self.lock:
            return [a for a in self._pidfds.values() if a.death_t is None]

    def snapshot(self) -> GroundTruth:
        with self.lock:
            return GroundTruth(dict(self.truth.attempts), list(self.truth.bad_lines))

    def read_new(self) -> None:
        path = self.truth_dir / TRUTH_FILE
        with path.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            if raw.strip():
                self._fold(raw)

    def _fold(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except ValueError:
            with self.lock:
                self.truth.bad_lines.append(raw.decode(errors="replace"))
            return
        with self.lock:
            started = self.truth.apply(record)
        if started is not None:
            self._watch(started)

    def _watch(self, attempt: Attempt) -> None:
        try:
            fd = os.pidfd_open(attempt.pid)
        except ProcessLookupError:
            attempt.death_t = time.monotonic()  # already gone: an upper bound
            attempt.death_exact = False
            return
        self._pidfds[fd] = attempt
        self._poll.register(fd, select.POLLIN)

    def _close(self, fd: int) -> None:
        with contextlib.suppress(KeyError, OSError):
            self._poll.unregister(fd)
        self._pidfds.pop(fd, None)
        os.close(fd)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read_new()
            for fd, _event in self._poll.poll(self._interval * 1000):
                now = time.monotonic()
                attempt = self._pidfds.get(fd)
                if attempt is not None:
                    with self.lock:
                        attempt.death_t = now
                    self._close(fd)
