"""The lock a TaskManager holds on its own folder (``<taskmanager.workdir>/<tm-id>/.lock``)
for as long as its process lives.

An ``fcntl.flock`` on that file: the kernel drops it when the process dies however it dies
(SIGKILL included), and a frozen process (SIGSTOP) keeps it. So "I could take the lock" means
"no live process is that TaskManager": what a TaskManager started under another id in the same
work directory checks before it takes over a predecessor's folder (:mod:`.predecessors`).

The file is never inherited by the attempts' processes (Python opens files non-inheritable),
so a runner outliving its TaskManager for a moment does not keep it. A folder removed while a
process waited for its lock would hand that process a lock on a deleted file: :func:`try_lock`
checks that the path still names the file it locked, and tries again otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from steward.errors import StewardError

LOCK_FILE = ".lock"
_ATTEMPTS = 3
_POLL = 0.2


class FolderInUseError(StewardError):
    """Another live process holds a TaskManager folder's lock."""


class FolderLock:
    """A held lock on ``folder``; :meth:`release` (or the process's end) lets it go."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder = folder
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def try_lock(folder: Path, *, create: bool = False) -> FolderLock | None:
    """The lock of ``folder`` if no other process holds it, else None (also None when the
    folder is gone and ``create`` is false)."""
    for _ in range(_ATTEMPTS):
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            if not create:
                return None
            continue
        if not _flock(fd):
            os.close(fd)
            return None
        if _same_file(folder / LOCK_FILE, fd):
            _note_holder(fd)
            return FolderLock(folder, fd)
        os.close(fd)  # removed (and maybe made again) while we waited: lock the new one
    return None


def lock_own(folder: Path, timeout: float) -> FolderLock:
    """This TaskManager's own folder's lock, waiting up to ``timeout`` for a process of the
    same id that is still exiting; :class:`FolderInUseError` if it keeps it."""
    deadline = time.monotonic() + timeout
    while True:
        held = try_lock(folder, create=True)
        if held is not None:
            return held
        if time.monotonic() >= deadline:
            raise FolderInUseError(
                f"another process (pid {holder(folder) or '?'}) holds {folder / LOCK_FILE}:"
                " a TaskManager with this id runs on this host with this taskmanager.workdir;"
                " stop it or use another --id"
            )
        time.sleep(_POLL)


def holder(folder: Path) -> int | None:
    """The pid the lock file names (its last holder: informative only)."""
    with contextlib.suppress(OSError, ValueError):
        return int((folder / LOCK_FILE).read_text().strip())
    return None


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(path: Path, fd: int) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _note_holder(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
