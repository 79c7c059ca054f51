"""Writing a file whole or not at all, and (when asked) so that it survives a crash.

Every file Steward writes for another process or a later start to read (a secret, a
certificate, a state record, a blob) is written under a temporary name of its own beside the
target and renamed over it: a reader sees the old file or the new one, never a part. The
temporary name is unique per write, so two writers of one path (hosts sharing a folder, two
processes of one cluster) never rename each other's half-written file.

A rename publishes a file atomically, but neither the file's bytes nor the rename itself are
on disk until the kernel writes them back (seconds later): a power loss in between leaves a
pointer in ZooKeeper, which its ensemble did make durable, naming a blob that is empty or
gone, and the acknowledged job is lost (rule 2: a submission is acknowledged once its graph is
durable). So a *durable* write is: the bytes to a temporary file, ``fsync`` it, rename,
``fsync`` the folder that holds the new name, and the parent of every folder made for it.
Object stores publish an object durably by themselves.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"
"""Every temporary name ends so (a folder's sender skips them)."""


def sync_file(path: str) -> None:
    """Flush ``path``'s bytes to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(path: str) -> None:
    """Flush the entries of folder ``path`` (a name just created or renamed in it)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(
    path: str | Path, data: bytes | str, *, mode: int = 0o644, durable: bool = False
) -> None:
    """Publish ``data`` (text as UTF-8) at ``path`` with file mode ``mode`` from its first
    byte, whole or not at all; ``durable``: on the disk before this returns. The folder is
    made if missing."""
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temporary = f"{target}.{secrets.token_hex(8)}{TEMPORARY_SUFFIX}"
    made, fd = _create(folder, temporary, mode)
    try:
        try:
            os.fchmod(fd, mode)  # whatever the umask
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if durable:
        sync_folder(folder)
        # A folder made for this file is itself a new name in its parent: without syncing
        # that, a crash can lose the folder, and the file with it (a job graph's first blob
        # goes into a folder of its own). Deepest first, up to the folder that was there.
        for made_folder in made:
            sync_folder(os.path.dirname(made_folder) or ".")


def _create(folder: str, temporary: str, mode: int) -> tuple[list[str], int]:
    """The folders made for ``temporary`` (deepest first) and its new file's descriptor. A
    folder removed between being made and the file's creation (a blob store removes a job's
    folder with its last blob) is made again."""
    made: list[str] = []
    tries = 0
    while True:
        tries += 1
        try:
            made += make_folders(folder)
            return made, os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except (FileNotFoundError, FileExistsError):
            # The folder went between two steps: the create found it missing, or makedirs
            # found it there (EEXIST) and then gone. Whether it is there now says nothing:
            # another writer may have made it again meanwhile.
            if tries == _FOLDER_TRIES:
                raise


_FOLDER_TRIES = 20


def make_folders(folder: str) -> list[str]:
    """Make ``folder`` and its missing parents (as ``os.makedirs``); returns the folders this
    call made, deepest first."""
    missing: list[str] = []
    current = os.path.abspath(folder)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    os.makedirs(folder, exist_ok=True)
    return missing
