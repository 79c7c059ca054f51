"""The per-host cache of the files jobs name, by content hash.

Every TaskManager on a host shares ``<taskmanager.workdir>/.cache/``::

    locks/<name>.lock          one flock per cached thing: one fetch or build at a time
    files/<sha256>/<filename>  the verified file (other names of the same bytes: hard links)
    archives/<sha256>/         an archive unpacked (renamed into place when complete)

Invariants:

- **Complete or absent.** Whatever has its final name is complete and verified: a file is
  streamed from the content store into a temporary name, hashed on the way, and renamed; an
  archive is unpacked into a temporary folder and renamed. A crash leaves only temporaries,
  which the next fetch under the lock removes.
- **Once.** Two attempts (threads or processes on the host) needing the same file take the
  same lock; the second finds it done. Nothing is fetched again for the next job that needs
  the same bytes, whatever its file is called.
- Cached files are made read-only: an attempt's folder links to them, and a job writing to a
  linked file must not change what the next job gets. They are the TaskManager user's alone
  (mode 0400, lock files 0600, under the mode-0700 folders of
  :mod:`~steward.taskmanager.private_dirs`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from steward.artifacts.archives import DEFAULT_MAX_BYTES, unpack
from steward.store.contents import ContentStore
from steward.wire.jobs import Dependency, DependencyKind
from steward.wire.runner_protocol import LocalDependency

log = logging.getLogger(__name__)

CACHE_DIR = ".cache"
_TEMPORARY = ".tmp-"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created), across threads and processes of the host."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def temporary_name(final: Path) -> Path:
    return final.with_name(f"{final.name}{_TEMPORARY}{uuid.uuid4().hex}")


def remove_temporaries(folder: Path, stem: str) -> None:
    """Remove what an interrupted fetch or build of ``stem`` left in ``folder``."""
    for leftover in folder.glob(f"{stem}{_TEMPORARY}*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


class DependencyCache:
    """Fetches a job's dependencies into ``root`` (see the module docstring)."""

    def __init__(
        self, contents: ContentStore, root: Path, *, max_unpacked: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.root = root
        self._contents = contents
        self._max_unpacked = max_unpacked

    def fetch(self, dependency: Dependency) -> LocalDependency:
        """The dependency on this host: fetched (and unpacked) if it was not yet.

        Raises BlobStoreError (storage), CorruptStateError (the stored bytes are damaged) or
        ArchiveRejectedError (an archive that cannot be unpacked safely; permanent).
        """
        packed = self._file(dependency)
        if dependency.kind is not DependencyKind.ARCHIVE:
            return LocalDependency(
                kind=dependency.kind, path=str(packed), link_name=dependency.link_name
            )
        return LocalDependency(
            kind=dependency.kind,
            path=str(self._unpacked(dependency, packed)),
            link_name=dependency.link_name,
            packed=str(packed),
        )

    def _file(self, dependency: Dependency) -> Path:
        folder = self.root / "files" / dependency.sha256
        final = folder / dependency.filename
        if _complete(final, dependency.size):
            return final
        with file_lock(self._lock_path(dependency.sha256)):
            if _complete(final, dependency.size):
                return final
            folder.mkdir(parents=True, exist_ok=True)
            remove_temporaries(folder, dependency.filename)
            temporary = temporary_name(final)
            if not self._link_other_name(folder, dependency, temporary):
                self._contents.copy_to(dependency.sha256, temporary)
                temporary.chmod(0o400)  # read-only, and this user's alone
            temporary.rename(final)
        log.info("dependency cached sha256=%s file=%s", dependency.sha256, final)
        return final

    def _link_other_name(self, folder: Path, dependency: Dependency, temporary: Path) -> bool:
        """Hard-link the same bytes fetched under another name, if there are any."""
        for other in folder.iterdir():
            if _TEMPORARY not in other.name and _complete(other, dependency.size):
                try:
                    os.link(other, temporary)
                except OSError:
                    return False
                return True
        return False

    def _unpacked(self, dependency: Dependency, packed: Path) -> Path:
        final = self.root / "archives" / dependency.sha256
        if final.is_dir():
            return final
        with file_lock(self._lock_path(f"{dependency.sha256}-unpacked")):
            if final.is_dir():
                return final
            final.parent.mkdir(parents=True, exist_ok=True)
            remove_temporaries(final.parent, final.name)
            temporary = temporary_name(final)
            try:
                unpack(packed, temporary, max_bytes=self._max_unpacked)
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
            temporary.rename(final)
        return final

    def _lock_path(self, name: str) -> Path:
        return self.root / "locks" / f"{name}.lock"


def _complete(path: Path, size: int) -> bool:
    try:
        return path.is_file() and path.stat().st_size == size
    except OSError:
        return False
