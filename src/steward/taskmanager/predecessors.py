"""Taking over what TaskManagers of other ids left in the same work directory.

A TaskManager keeps its attempts under ``<taskmanager.workdir>/<tm-id>/`` and archives their
logs (:mod:`.log_archiver`); one that dies before it could leaves them there. Returning under
its own id, it archives them itself; replaced under another id (a new pod name, a new default
id after a reboot), nobody would. So every TaskManager looks at its siblings' folders, at start
and every :data:`SCAN_INTERVAL` seconds, and takes one over only when

- its TaskManager holds no registration in ZooKeeper (``taskmanagers/<id>``: its session is
  gone), checked before and again while holding the lock;
- no live process holds its lock (:mod:`.folder_lock`: a TaskManager holds its own while it
  runs, and a frozen one keeps it), taken for the whole takeover, so two successors never
  take the same folder;
- no process has its working directory or an open file inside it (a runner still dying).

It then archives the folder's unarchived logs with the very code of the own-id path (a
:class:`~.log_archiver.LogArchiver` rooted there), and removes the folder once every log is in
the archive; a log that cannot be archived yet (storage away) keeps the folder for a later
scan. A folder whose lock is held is never touched. One ZooKeeper read per sibling folder per
scan: a host has a handful of TaskManager ids, whatever the number of jobs.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from steward.errors import StewardError
from steward.ha.membership import MemberNode
from steward.ha.session import Session
from steward.store.log_archive import LogArchive
from steward.taskmanager.folder_lock import LOCK_FILE, FolderLock, try_lock
from steward.taskmanager.log_archiver import LogArchiver, PathsInUse

log = logging.getLogger(__name__)

SCAN_INTERVAL = 60.0
"""Seconds between two looks at the siblings' folders (after the one at start)."""
ARCHIVE_PATIENCE = 30.0
"""Longest one takeover waits for its logs to reach the archive before leaving it for later."""
_RETRY = 0.2


class Predecessors:
    """Takes over the folders under ``workdir`` of TaskManagers other than ``own_id`` that are
    gone; see the module docstring."""

    def __init__(
        self,
        workdir: Path,
        own_id: str,
        session: Session,
        archive: LogArchive,
        paths_in_use: PathsInUse,
        *,
        is_valid_id: Callable[[str], bool],
        on_failure: Callable[[], None] = lambda: None,
        interval: float = SCAN_INTERVAL,
    ) -> None:
        self.workdir = workdir
        self._own_id = own_id
        self._session = session
        self._archive = archive
        self._paths_in_use = paths_in_use
        self._is_valid_id = is_valid_id
        self._on_failure = on_failure
        self._interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="predecessors", daemon=True)

    def start(self) -> Predecessors:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=ARCHIVE_PATIENCE + 5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.scan_once()
            except Exception:
                log.exception("looking at predecessors' folders failed; retrying")
            self._stopped.wait(self._interval)

    def scan_once(self) -> list[str]:
        """One look at every sibling folder; returns the ids whose folders were taken over."""
        taken = []
        for folder in self._siblings():
            if self._stopped.is_set():
                break
            if self._gone(folder.name) and self._take_over(folder):
                taken.append(folder.name)
        return taken

    def _siblings(self) -> list[Path]:
        try:
            entries = sorted(self.workdir.iterdir())
        except OSError:
            return []
        return [
            entry
            for entry in entries
            if entry.name != self._own_id
            and self._is_valid_id(entry.name)
            and entry.is_dir()
            and not entry.is_symlink()
        ]

    def _gone(self, tm_id: str) -> bool:
        """Whether ``tm_id`` holds no registration (False when ZooKeeper cannot tell)."""
        try:
            owner = MemberNode(self._session, self._session.layout.taskmanager(tm_id)).owner()
        except StewardError as exc:
            log.debug("cannot tell whether tm=%s is registered: %s", tm_id, exc)
            return False
        return owner is None

    def _take_over(self, folder: Path) -> bool:
        lock = try_lock(folder)
        if lock is None:
            log.info("predecessor folder left alone: a live process holds it folder=%s", folder)
            return False
        with lock:
            if not self._gone(folder.name) or self._in_use(folder):
                log.info("predecessor folder left alone: registered or in use folder=%s", folder)
                return False
            archived = self._archive_logs(folder)
            if archived is None or self._in_use(folder):
                return False
            _remove(folder, lock)
        log.info(
            "predecessor folder taken over tm=%s logs_archived=%d folder=%s",
            folder.name,
            archived,
            folder,
        )
        return True

    def _archive_logs(self, folder: Path) -> int | None:
        """Archive the folder's unarchived logs; their count, or None if some are not yet."""
        archiver = LogArchiver(
            folder, self._archive, self._paths_in_use, on_failure=self._on_failure
        )
        found = archiver.scan_leftovers()
        deadline = time.monotonic() + ARCHIVE_PATIENCE
        while archiver.pending() and time.monotonic() < deadline:
            archiver.run_once()
            if archiver.pending() and self._stopped.wait(_RETRY):
                break
        left = archiver.pending()
        if left:
            log.warning(
                "predecessor's logs not archived yet tm=%s left=%d; its folder stays",
                folder.name,
                len(left),
            )
            return None
        return found

    def _in_use(self, folder: Path) -> bool:
        """A process works in the folder or has a file open in it (the lock file aside)."""
        prefix, lock_file = str(folder) + "/", str(folder / LOCK_FILE)
        used = [p for p in self._paths_in_use() if p == str(folder) or p.startswith(prefix)]
        return any(path != lock_file for path in used)


def _remove(folder: Path, lock: FolderLock) -> None:
    """Remove the folder, its lock file last: a process that opened the file meanwhile finds
    it gone once it holds the lock (folder_lock), so it never shares it."""
    for child in folder.iterdir():
        if child.name == LOCK_FILE:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    (folder / LOCK_FILE).unlink(missing_ok=True)
    lock.release()
    try:
        folder.rmdir()
    except OSError as exc:  # something appeared meanwhile: a later scan looks again
        log.warning("predecessor folder not removed folder=%s: %s", folder, exc)
