"""Files that survive a crash of the machine once written: what "stored" means on a local
filesystem.

A rename publishes a file atomically, but neither the file's bytes nor the rename itself are
on disk until the kernel writes them back (seconds later): a power loss in between leaves a
pointer in ZooKeeper, which its ensemble did make durable, naming a blob that is empty or
gone, and the acknowledged job is lost (rule 2: a submission is acknowledged once its graph is
durable). So a local write is: the bytes to a temporary file, ``fsync`` it, rename, ``fsync``
the folder that holds the new name. Object stores publish an object durably by themselves.
"""

from __future__ import annotations

import contextlib
import os
import uuid


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


def write_file(path: str, data: bytes, mode: int) -> None:
    """Publish ``data`` at ``path`` (file mode ``mode``) atomically and durably."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.fchmod(fd, mode)  # whatever the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    sync_folder(folder)
