"""Removing ended attempts' folders from a TaskManager's work directory.

Each attempt leaves ``<taskmanager.workdir>/<tm-id>/<job-id>/<attempt>/`` (its unpacked
artifact, ``runner.log``, whatever the pipeline wrote there) and each warm spare a folder
under ``.spares/``. This module owns when they go: ``taskmanager.workdir.retention`` after

- an attempt was *forgotten* (:mod:`steward.taskmanager.reporting`): its outcome was
  acknowledged by the leader and its lease released, which happens only once its whole
  process group is gone;
- a spare died, or the attempt it was handed to ended (:mod:`steward.taskmanager.spares`);
- for folders found at start (earlier runs of this TaskManager id): their last change.

and only when, at that moment,

- the TaskManager does not know an attempt of that folder (an attempt re-offered after a
  rejection, or one of an earlier run with the same number): checked, and the folder moved to
  ``.trash/``, in one step under the attempts' lock (``guard``), so a start that is unpacking
  into it can never lose it;
- no process has its working directory or an open file inside it: a runner of an earlier
  run that is still dying, or the log capper still writing the last lines
  (:func:`paths_in_use`, one scan of ``/proc`` per pass that has folders due);
- its log is not waiting to be archived (``keep``, :mod:`steward.taskmanager.log_archiver`):
  the local copy goes only once the HA storage has one, however long the storage is away.

An attempt's or a spare's scratch folder (``tmp/``, :mod:`steward.taskmanager.scratch`) is
due at once instead (no retention, no wait for the log's archive; an earlier run's while no
process uses its attempt's folder): its temporary files, up to a whole shuffle, are nobody's
once its processes are gone.

Removal runs on its own thread (never on the heartbeat path), logs one INFO line per folder,
and a failure is logged, never raised: the folder is left for the next start to retry.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from steward.taskmanager.scratch import scratch_dir

log = logging.getLogger(__name__)

Keep = Callable[[str, int], bool]
"""``keep(job_id, attempt)``: True while the attempt's folder must stay (its log is not
archived yet, :mod:`steward.taskmanager.log_archiver`)."""
Guard = Callable[[str, int | None, Callable[[], object]], bool]
"""``guard(job_id, attempt, action)``: run ``action`` under the attempts' lock unless an
attempt of ``job_id`` (``attempt`` None: any attempt) is known; True if it ran."""

SPARES = ".spares"
TRASH = ".trash"
_RETRY_INTERVAL = 1.0
_MAX_WAIT = 5.0


@dataclass
class _Due:
    folder: Path
    due: float
    job_id: str | None = None
    attempt: int | None = None
    what: str = "attempt folder"
    waits_for_archive: bool = True
    watched: Path | None = None
    """The folder no process may use for this one to go (None: this one): for the scratch of
    an earlier run's folder, that folder, where a dying runner of that run may still work."""


def _scratch_of(
    folder: Path,
    due: float,
    job_id: str | None = None,
    attempt: int | None = None,
    *,
    watched: Path | None = None,
) -> _Due:
    """The removal of ``folder``'s scratch: due at ``due``, whatever its log's archive."""
    return _Due(
        scratch_dir(folder),
        due,
        job_id,
        attempt,
        what="scratch folder",
        waits_for_archive=False,
        watched=watched,
    )


class WorkdirCleaner:
    """Removes the folders of ended attempts and dead spares under ``root`` after ``retention``."""

    def __init__(
        self,
        root: Path,
        retention: float,
        guard: Guard,
        *,
        include_spares: bool = True,
        keep: Keep = lambda _job_id, _attempt: False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.retention = retention
        self._guard = guard
        self._keep = keep
        self._include_spares = include_spares
        self._clock = clock
        self._lock = threading.Lock()
        self._due: dict[Path, _Due] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workdir-cleaner", daemon=True)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> WorkdirCleaner:
        """Schedule what earlier runs left, then remove due folders on a thread."""
        try:
            self.scan_leftovers()
        except OSError as exc:
            log.warning(
                "could not scan the work directory for old folders root=%s: %s", self.root, exc
            )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    # ------------------------------------------------------------------ scheduling

    def attempt_ended(self, job_id: str, attempt: int) -> None:
        """The attempt is forgotten (outcome acknowledged, group gone, lease released)."""
        folder = self.root / job_id / str(attempt)
        now = self._clock()
        self._schedule(_scratch_of(folder, now, job_id, attempt))
        self._schedule(_Due(folder, now + self.retention, job_id, attempt))

    def folder_ended(self, folder: Path) -> None:
        """A spare's folder whose processes are gone."""
        now = self._clock()
        self._schedule(_scratch_of(folder, now))
        self._schedule(_Due(folder, now + self.retention, what="spare folder"))

    def _schedule(self, entry: _Due) -> None:
        with self._lock:
            self._due[entry.folder] = entry
        self._wake.set()

    def pending(self) -> list[Path]:
        with self._lock:
            return sorted(self._due)

    def scan_leftovers(self) -> None:
        """Schedule the folders of earlier runs: due ``retention`` after their last change,
        their scratch at once (its runner died with that run: rule 4; one still dying keeps
        it while it works in the folder)."""
        trash = self.root / TRASH
        if trash.is_dir():
            for condemned in trash.iterdir():
                _remove_quietly(condemned)
        if not self.root.is_dir():
            return
        for job_dir in self.root.iterdir():
            if not job_dir.is_dir() or job_dir.name == TRASH:
                continue
            if job_dir.name == SPARES:
                if self._include_spares:
                    for folder in job_dir.iterdir():
                        if folder.is_dir():
                            due = _last_change(folder) + self.retention
                            self._schedule(_Due(folder, due, what="spare folder"))
                            self._leftover_scratch(folder, None, None)
                continue
            for folder in job_dir.iterdir():
                if folder.is_dir() and folder.name.isdigit():
                    due = _last_change(folder) + self.retention
                    self._schedule(_Due(folder, due, job_dir.name, int(folder.name)))
                    self._leftover_scratch(folder, job_dir.name, int(folder.name))
            if not any(job_dir.iterdir()):
                self._remove_job_dir(job_dir.name)

    def _leftover_scratch(self, folder: Path, job_id: str | None, attempt: int | None) -> None:
        if scratch_dir(folder).is_dir():
            self._schedule(_scratch_of(folder, self._clock(), job_id, attempt, watched=folder))

    # ------------------------------------------------------------------ removing

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.run_once()
            except Exception:
                log.exception("work directory cleanup failed; retrying")
            self._wake.wait(self._next_wait())
            self._wake.clear()

    def _next_wait(self) -> float:
        with self._lock:
            first = min((entry.due for entry in self._due.values()), default=None)
        if first is None:
            return _MAX_WAIT
        until = first - self._clock()
        # Due but deferred (a process still uses it): look again a little later.
        return _RETRY_INTERVAL if until <= 0 else min(_MAX_WAIT, until)

    def run_once(self) -> list[Path]:
        """One pass: remove every due folder no process uses; returns those removed."""
        now = self._clock()
        with self._lock:
            due = [entry for entry in self._due.values() if entry.due <= now]
        if not due:
            return []
        in_use = paths_in_use()
        removed = []
        for entry in due:
            if _used(entry.watched or entry.folder, in_use):
                log.debug("folder still in use, removal deferred folder=%s", entry.folder)
                continue
            if self._kept(entry):
                log.debug("log not archived yet, removal deferred folder=%s", entry.folder)
                continue
            with self._lock:
                self._due.pop(entry.folder, None)
            if self._remove(entry):
                removed.append(entry.folder)
        return removed

    def _kept(self, entry: _Due) -> bool:
        if not entry.waits_for_archive or entry.attempt is None:
            return False
        return self._keep(entry.job_id or "", entry.attempt)

    def _remove(self, entry: _Due) -> bool:
        trash = self.root / TRASH / f"{entry.folder.name}-{uuid.uuid4().hex[:8]}"
        moved: list[bool] = []

        def move() -> None:
            with contextlib.suppress(FileNotFoundError):  # never made (rejected, no artifact)
                trash.parent.mkdir(exist_ok=True)
                entry.folder.rename(trash)
                moved.append(True)

        try:
            if entry.job_id is None:
                move()
            elif not self._guard(entry.job_id, entry.attempt, move):
                log.info("%s kept: the attempt is known again folder=%s", entry.what, entry.folder)
                return False
        except OSError as exc:
            log.warning("could not remove %s %s: %s", entry.what, entry.folder, exc)
            return False
        failure = _remove_quietly(trash) if moved else None
        if moved and failure is None:
            log.info("%s removed folder=%s", entry.what, entry.folder)
        if entry.job_id is not None:
            self._remove_job_dir(entry.job_id)
        return bool(moved) and failure is None

    def _remove_job_dir(self, job_id: str) -> None:
        job_dir = self.root / job_id

        def rmdir() -> None:
            with contextlib.suppress(FileNotFoundError, OSError):
                job_dir.rmdir()  # only if empty: other attempts' folders stay

        # Under the guard: a start of another attempt of this job may be creating it now.
        self._guard(job_id, None, rmdir)


def _remove_quietly(folder: Path) -> OSError | None:
    errors: list[OSError] = []

    def failed(_function: object, _path: str, info: tuple[type, BaseException, object]) -> None:
        exc = info[1]
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            errors.append(exc)

    shutil.rmtree(folder, onerror=failed)
    if errors:
        log.warning("could not remove folder=%s: %s (%d errors)", folder, errors[0], len(errors))
        return errors[0]
    return None


def _last_change(folder: Path) -> float:
    """The newest modification time of the folder and its files directly inside (the log)."""
    newest = 0.0
    with contextlib.suppress(OSError):
        newest = folder.stat().st_mtime
        for child in folder.iterdir():
            with contextlib.suppress(OSError):
                newest = max(newest, child.stat().st_mtime)
    return newest


def _used(folder: Path, in_use: set[str]) -> bool:
    prefix = str(folder)
    inside = prefix + os.sep
    return any(path == prefix or path.startswith(inside) for path in in_use)


def paths_in_use() -> set[str]:
    """Working directories and open files of every process we can see."""
    proc = Path("/proc")
    if not proc.is_dir():
        return _paths_in_use_psutil()
    paths: set[str] = set()
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            paths.add(os.readlink(f"/proc/{entry.name}/cwd"))
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                with contextlib.suppress(OSError):
                    paths.add(os.readlink(fd.path))
    return paths


def _paths_in_use_psutil() -> set[str]:
    paths: set[str] = set()
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            paths.add(process.cwd())
            paths.update(f.path for f in process.open_files())
    return paths
