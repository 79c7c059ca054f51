"""Ground truth for incident tests: what really ran, read from the pipelines' own log.

Steward's own view (status records, the REST API) is what the tests check *against*; this
module reads what the ``truthful.py`` pipeline wrote (one JSON line per attempt ``start`` and
``stop``, monotonic clock) and, for attempts that died without writing ``stop`` (SIGKILLed by
a dead-man's switch or with their TaskManager), watches their pids from a thread and notes
the first moment each was seen gone. That moment is an upper bound of the real death, so
"it stopped before the replacement started" checked with it can only be stricter.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

PIPELINE = Path(__file__).parent / "pipelines" / "truthful.py"


@dataclass(frozen=True)
class Run:
    """One attempt as it really ran: its process and its lifetime (monotonic seconds)."""

    job: str
    attempt: int
    pid: int
    start: float
    stop: float | None
    """From the attempt's own ``stop`` line, else when its pid was seen gone; None: alive."""


def pid_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie its frozen parent has not reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class GroundTruth:
    """The truth file of one test, plus a watcher of the pids it names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._deaths: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="truth-watch", daemon=True)

    def __enter__(self) -> GroundTruth:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    # ------------------------------------------------------------------ reading

    def lines(self, job: str | None = None, event: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        found = []
        for raw in self.path.read_text().splitlines():
            if not raw.strip():
                continue
            line = json.loads(raw)
            if (job is None or line["job"] == job) and (event is None or line["event"] == event):
                found.append(line)
        return found

    def starts(self, job: str) -> list[dict[str, Any]]:
        return self.lines(job, "start")

    def runs(self, job: str) -> list[Run]:
        """Every attempt of ``job`` that started, in start order."""
        stops = {line["pid"]: line["t"] for line in self.lines(job, "stop")}
        with self._lock:
            deaths = dict(self._deaths)
        return [
            Run(
                job=job,
                attempt=line["attempt"],
                pid=line["pid"],
                start=line["t"],
                stop=stops.get(line["pid"], deaths.get(line["pid"])),
            )
            for line in sorted(self.starts(job), key=lambda line: line["t"])
        ]

    def death_of(self, pid: int) -> float | None:
        with self._lock:
            return self._deaths.get(pid)

    # ------------------------------------------------------------------ checks

    def assert_no_overlap(self, job: str) -> list[Run]:
        """No two attempts of ``job`` ever ran at once (each stopped before the next began)."""
        runs = self.runs(job)
        for earlier, later in itertools.pairwise(runs):
            assert earlier.stop is not None, (
                f"{job}: attempt {earlier.attempt} (pid {earlier.pid}) still runs while"
                f" attempt {later.attempt} started: {runs}"
            )
            assert earlier.stop < later.start, (
                f"{job}: attempt {earlier.attempt} stopped at {earlier.stop:.3f}, after"
                f" attempt {later.attempt} started at {later.start:.3f}: {runs}"
            )
        return runs

    def assert_started_once(self, job: str) -> Run:
        runs = self.runs(job)
        assert len(runs) == 1, f"{job}: expected exactly one start, got {runs}"
        return runs[0]

    # ------------------------------------------------------------------ the watcher

    def _watch(self) -> None:
        while not self._stop.is_set():
            stopped = {line["pid"] for line in self.lines(event="stop")}
            for line in self.lines(event="start"):
                pid = line["pid"]
                if pid in stopped or pid in self._deaths:
                    continue
                if pid_gone(pid):
                    seen = time.monotonic()  # after the check: never earlier than the death
                    with self._lock:
                        self._deaths[pid] = seen
            self._stop.wait(0.02)
