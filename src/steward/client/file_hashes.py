"""Remembered SHA-256s of large local files, so a second submission need not read them again.

A job's files are named by their content's hash (:mod:`steward.client.job_files`); hashing a 300 MB
environment archive takes about half a second, every time. This cache keeps, per absolute
path, the hash with the file's identity as ``os.stat`` gives it (device, inode, size, and the
modification and status-change times in nanoseconds, as git's index does): the status-change
time moves on every write, and no program can set it back, so a changed file never matches
its old entry. The cache is a small JSON file in ``$XDG_CACHE_HOME/steward`` (default
``~/.cache/steward``), rewritten whole through a rename; losing it, or a write lost to another
process's, costs only a re-hash. Only files of at least :data:`MIN_SIZE` bytes are kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MIN_SIZE = 1 << 20
MAX_ENTRIES = 1000


def default_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "steward" / "file-hashes.json"


def identity(stat: os.stat_result) -> list[int]:
    """What changes when the file does: device, inode, size, modification and change times."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


class FileHashes:
    """``sha256_of(path, stat)`` if remembered for exactly this file; ``remember`` otherwise."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._entries: dict[str, Any] = self._load()

    def sha256_of(self, path: Path, stat: os.stat_result) -> str | None:
        entry = self._entries.get(str(path.resolve()))
        if isinstance(entry, dict) and entry.get("identity") == identity(stat):
            sha = entry.get("sha256")
            return sha if isinstance(sha, str) else None
        return None

    def remember(self, path: Path, stat: os.stat_result, sha256: str) -> None:
        if stat.st_size < MIN_SIZE:
            return
        self._entries[str(path.resolve())] = {"identity": identity(stat), "sha256": sha256}
        while len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        self._save()

    def _load(self) -> dict[str, Any]:
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".file-hashes-")
        except OSError as exc:  # a read-only home: hashing again next time is all it costs
            log.debug("file hash cache not written path=%s error=%s", self.path, exc)
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self._entries, out)
            os.replace(temporary, self.path)
        except OSError as exc:
            log.debug("file hash cache not written path=%s error=%s", self.path, exc)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
