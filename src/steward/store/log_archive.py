"""The log archive: ended attempts' logs, kept in the HA storage after their TaskManager.

Layout under the blob storage's root::

    logs/<job-id>/<attempt>.log     an ended attempt's runner.log, as its TaskManager had it

Invariants:

- **Whole or absent.** A log is published at its key only once all of it is stored: on a local
  filesystem it is copied to a temporary name beside it (``.<attempt>.log.<uuid>.part``),
  synced, then renamed (:mod:`steward.files`); object stores publish an object whole.
  A reader therefore never sees part of an archived log, and "archived" means "complete".
- **An absent storage is not an empty one.** A local storage folder that is not there (an
  unmounted share) refuses the write (:class:`BlobStoreError`) instead of creating a new
  folder in its place, so the TaskManager keeps its copy and tries again.
- **Never whole in memory.** Logs move and are read in blocks of :data:`BLOCK` bytes.

Who writes: the TaskManager that ran the attempt (:mod:`steward.taskmanager.log_archiver`).
Who reads: every JobManager, once that TaskManager no longer serves the log
(:mod:`steward.jobmanager.rest.archived_logs`). Who deletes: the leader's retention rounds
(:mod:`steward.jobmanager.log_retention`). fsspec and OS errors are mapped here, once, to
:class:`BlobStoreError`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from steward import files
from steward.errors import BlobStoreError
from steward.store.blob import OPERATION_TIMEOUT, PRIVATE_FILE_MODE, BlobStore, modified_of

PREFIX = "logs"
BLOCK = 256 * 1024
_NAME = re.compile(r"([1-9][0-9]{0,9})\.log")
_PART = re.compile(r"\.[1-9][0-9]{0,9}\.log\.[0-9a-f]{32}\.part")
_UPLOAD_TIMEOUT = 6 * OPERATION_TIMEOUT
"""An object store's upload of a capped log (64 MiB by default) may take longer than one call."""


@dataclass(frozen=True)
class ArchivedLog:
    """One archived log as listed: its key, size in bytes and last change (epoch seconds)."""

    key: str
    size: int
    modified: float
    partial: bool = False
    """A temporary of a copy that never finished (a TaskManager died mid-copy)."""


@contextlib.contextmanager
def _storage(what: str, url: str) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as exc:
        raise BlobStoreError(f"{what} in {url}: {exc}") from exc


class LogArchive:
    """Archived logs in a :class:`BlobStore`'s filesystem.

    Example::

        archive = LogArchive(blobs)
        archive.put("nightly", 3, Path("work/tm-1/nightly/3/runner.log"))
        opened = archive.open("nightly", 3)   # None if not archived
        if opened is not None:
            with opened as log: ...
    """

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self._fs = blobs.filesystem
        self._async = bool(getattr(self._fs, "async_impl", False))

    def key(self, job_id: str, attempt: int) -> str:
        return f"{PREFIX}/{job_id}/{attempt}.log"

    # ------------------------------------------------------------------ writing

    def put(self, job_id: str, attempt: int, source: Path) -> int:
        """Store ``source`` as the attempt's log; returns its size. Raises BlobStoreError (the
        storage is unreachable or refused) or OSError (``source`` cannot be read)."""
        path = self.blobs.path(self.key(job_id, attempt))
        if self.blobs.is_local:
            return self._put_local(source, path)
        with _storage(f"archiving the log of {job_id}/{attempt}", self.blobs.url):
            bounded = {"timeout": _UPLOAD_TIMEOUT} if self._async else {}
            self._fs.put_file(str(source), path, **bounded)
        return source.stat().st_size

    def _put_local(self, source: Path, path: str) -> int:
        root = self.blobs.path(PREFIX).rsplit("/", 1)[0]
        if not os.path.isdir(root):
            raise BlobStoreError(f"blob storage {self.blobs.url} is not there (not mounted?)")
        folder, name = os.path.split(path)
        temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.part")
        with open(source, "rb") as reader:
            try:
                with _storage(f"archiving {name}", self.blobs.url):
                    os.makedirs(folder, exist_ok=True)
                    with open(temporary, "xb") as sink:
                        os.fchmod(sink.fileno(), PRIVATE_FILE_MODE)
                        shutil.copyfileobj(reader, sink, BLOCK)
                        size = sink.tell()
                        sink.flush()
                        os.fsync(sink.fileno())
                    os.replace(temporary, path)
                    files.sync_folder(folder)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
        return size

    # ------------------------------------------------------------------ reading

    def open(self, job_id: str, attempt: int) -> BinaryIO | None:
        """The archived log open for reading (seekable), or None if it is not archived.
        Raises BlobStoreError when the storage cannot be read."""
        path = self.blobs.path(self.key(job_id, attempt))
        try:
            opened: IO[bytes] = self._fs.open(path, "rb")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            what = f"cannot read the archived log of {job_id}/{attempt}"
            raise BlobStoreError(f"{what}: {exc}") from exc
        return opened  # type: ignore[return-value]

    def exists(self, job_id: str, attempt: int) -> bool:
        with _storage("looking for an archived log", self.blobs.url):
            return bool(self._fs.exists(self.blobs.path(self.key(job_id, attempt))))

    # ------------------------------------------------------------------ retention

    def listing(self) -> Iterator[ArchivedLog]:
        """Every archived log (and leftover temporary), one at a time: local storage is walked
        folder by folder, never held whole; an object store is listed by its driver's pages."""
        base = self.blobs.path(PREFIX)
        with _storage("listing archived logs", self.blobs.url):
            if self.blobs.is_local:
                yield from self._walk_local(base)
                return
            try:
                found: dict[str, dict[str, Any]] = self._fs.find(base, detail=True)
            except FileNotFoundError:
                return
            for path, detail in found.items():
                entry = _entry(path, detail, self.blobs.path(PREFIX))
                if entry is not None:
                    yield entry

    def _walk_local(self, base: str) -> Iterator[ArchivedLog]:
        try:
            jobs = os.scandir(base)
        except FileNotFoundError:
            return
        with jobs:
            for job in jobs:
                if not job.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(job.path) as files:
                    for file in files:
                        with contextlib.suppress(FileNotFoundError):
                            stat = file.stat(follow_symlinks=False)
                            entry = _classify(f"{PREFIX}/{job.name}/{file.name}", file.name)
                            if entry is not None:
                                yield ArchivedLog(entry[0], stat.st_size, stat.st_mtime, entry[1])

    def delete(self, key: str) -> None:
        """Delete an archived log (or temporary) by key; a missing one is not an error."""
        with _storage(f"deleting {key}", self.blobs.url):
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm_file(self.blobs.path(key))
            if self.blobs.is_local:  # the job's folder goes with its last log
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(self.blobs.path(key)))


def _classify(key: str, name: str) -> tuple[str, bool] | None:
    if _NAME.fullmatch(name):
        return key, False
    if _PART.fullmatch(name):
        return key, True
    return None


def _entry(path: str, detail: dict[str, Any], base: str) -> ArchivedLog | None:
    key = PREFIX + path[len(base) :] if path.startswith(base) else path
    found = _classify(key, key.rsplit("/", 1)[-1])
    if found is None:
        return None
    size = int(detail.get("size") or 0)
    return ArchivedLog(found[0], size, modified_of(detail), found[1])


def last_lines_start(log: BinaryIO, lines: int) -> int:
    """The offset where the last ``lines`` lines of ``log`` start, reading from its end."""
    end = log.seek(0, os.SEEK_END)
    position, newlines = end, 0
    # A final newline ends the last line; it does not start another.
    if end > 0:
        log.seek(end - 1)
        if log.read(1) == b"\n":
            newlines = -1
    while position > 0:
        step = min(BLOCK, position)
        position -= step
        log.seek(position)
        block = log.read(step)
        for index in range(len(block) - 1, -1, -1):
            if block[index] == 0x0A:
                newlines += 1
                if newlines == lines:
                    return position + index + 1
    return 0
