"""Archiving ended attempts' logs to the HA storage, from the TaskManager that has them.

When an attempt's whole process group is gone (:meth:`LogArchiver.attempt_ended`), its
``runner.log`` is copied to the log archive (:mod:`steward.store.log_archive`) and a marker
``runner.log.archived`` is written beside it. So are the logs that an earlier run of this
TaskManager left unarchived (:meth:`LogArchiver.scan_leftovers`: it was stopped, killed or
cut off before it could): a TaskManager that returns under its id archives what it lost.

- **Off the hot path.** Archiving runs on its own thread; ending an attempt only queues it,
  so the end report and the heartbeats never wait for the storage.
- **After the last line.** A log is copied only once no process has it open (the log capper
  outlives the group by a moment), checked with one scan of ``/proc`` per pass.
- **Retried.** A storage error (a blip, an unmounted share) is retried with a doubling delay
  from :data:`FIRST_DELAY` to :data:`MAX_DELAY`, for as long as the TaskManager runs.
- **The local copy stays until the archive has it.** :meth:`LogArchiver.holds` tells the work
  directory's cleaner (:mod:`steward.taskmanager.workdir_cleaner`) to keep an attempt folder
  whose log is still queued; the marker is written only after the archive confirmed the copy.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from steward.errors import StewardError
from steward.store.log_archive import LogArchive
from steward.taskmanager.preparation import LOG_FILE

log = logging.getLogger(__name__)

MARKER = LOG_FILE + ".archived"
FIRST_DELAY = 1.0
MAX_DELAY = 60.0
_IN_USE_DELAY = 0.5
_IDLE_WAIT = 5.0

PathsInUse = Callable[[], set[str]]


@dataclass
class _Pending:
    job_id: str
    attempt: int
    due: float
    delay: float = FIRST_DELAY
    failures: int = 0


class LogArchiver:
    """Copies the logs of ended attempts under ``root`` (``<taskmanager.workdir>/<tm-id>``)
    to ``archive``; see the module docstring."""

    def __init__(
        self,
        root: Path,
        archive: LogArchive,
        paths_in_use: PathsInUse,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        self.root = root
        self._archive = archive
        self._paths_in_use = paths_in_use
        self._clock = clock
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int], _Pending] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-archiver", daemon=True)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> LogArchiver:
        self._thread.start()
        return self

    def stop(self, flush: float = 0.0) -> None:
        """Stop; first, for up to ``flush`` seconds, archive what is queued (a graceful stop
        of the TaskManager). What is left is archived by its next start."""
        deadline = time.monotonic() + flush
        while self.pending() and time.monotonic() < deadline and self._thread.is_alive():
            self._wake.set()
            time.sleep(0.05)
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    # ------------------------------------------------------------------ queueing

    def attempt_ended(self, job_id: str, attempt: int) -> None:
        """The attempt's process group is gone: archive its log (if it has one)."""
        with self._lock:
            self._pending.setdefault((job_id, attempt), _Pending(job_id, attempt, self._clock()))
        self._wake.set()

    def scan_leftovers(self) -> int:
        """Queue the logs earlier runs of this TaskManager left unarchived; returns how many."""
        try:
            found = self._scan()
        except OSError as exc:
            log.warning("could not look for unarchived logs root=%s: %s", self.root, exc)
            return 0
        if found:
            log.info("unarchived logs of an earlier run queued count=%d root=%s", found, self.root)
        return found

    def _scan(self) -> int:
        found = 0
        if not self.root.is_dir():
            return 0
        for job_dir in self.root.iterdir():
            if not job_dir.is_dir() or job_dir.name.startswith("."):
                continue
            for folder in job_dir.iterdir():
                if folder.name.isdigit() and self._unarchived(folder):
                    self.attempt_ended(job_dir.name, int(folder.name))
                    found += 1
        return found

    def pending(self) -> list[tuple[str, int]]:
        with self._lock:
            return sorted(self._pending)

    def holds(self, job_id: str, attempt: int) -> bool:
        """Whether the attempt's folder must stay: its log is queued, not archived yet."""
        with self._lock:
            return (job_id, attempt) in self._pending

    # ------------------------------------------------------------------ archiving

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.run_once()
            except Exception:
                log.exception("log archiving failed; retrying")
            self._wake.wait(self._next_wait())
            self._wake.clear()

    def _next_wait(self) -> float:
        with self._lock:
            first = min((p.due for p in self._pending.values()), default=None)
        if first is None:
            return _IDLE_WAIT
        return max(0.0, min(_IDLE_WAIT, first - self._clock()))

    def run_once(self) -> list[tuple[str, int]]:
        """One pass: archive every due log no process has open; returns those archived."""
        now = self._clock()
        with self._lock:
            due = [p for p in self._pending.values() if p.due <= now]
        if not due:
            return []
        in_use = self._paths_in_use()
        done = []
        for entry in due:
            if self._stopped.is_set():
                break
            if str(self._log(entry)) in in_use:  # the capper's last lines
                entry.due = self._clock() + _IN_USE_DELAY
                continue
            if self._archive_one(entry):
                with self._lock:
                    self._pending.pop((entry.job_id, entry.attempt), None)
                done.append((entry.job_id, entry.attempt))
        return done

    def _archive_one(self, entry: _Pending) -> bool:
        source = self._log(entry)
        if not source.is_file():
            return True  # rejected before it made a log, or removed by hand: nothing to keep
        try:
            size = self._archive.put(entry.job_id, entry.attempt, source)
            (source.parent / MARKER).write_text(f"{size}\n")
        except (StewardError, OSError) as exc:
            self._retry_later(entry, exc)
            return False
        log.info(
            "attempt log archived job=%s attempt=%d bytes=%d", entry.job_id, entry.attempt, size
        )
        return True

    def _retry_later(self, entry: _Pending, exc: Exception) -> None:
        entry.failures += 1
        entry.due = self._clock() + entry.delay
        self._on_failure()
        log.warning(
            "attempt log not archived yet job=%s attempt=%d failures=%d retry_in=%.1fs error=%s",
            entry.job_id,
            entry.attempt,
            entry.failures,
            entry.delay,
            exc,
        )
        entry.delay = min(MAX_DELAY, entry.delay * 2)

    def _log(self, entry: _Pending) -> Path:
        return self.root / entry.job_id / str(entry.attempt) / LOG_FILE

    def _unarchived(self, folder: Path) -> bool:
        with contextlib.suppress(OSError):
            return (folder / LOG_FILE).is_file() and not (folder / MARKER).exists()
        return False
