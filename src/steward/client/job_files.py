"""The files a job names, on the client's side: found, hashed and described for the spec.

spark-submit's ``--py-files``, ``--files``, ``--archives`` (``path#alias``) and ``--jars``
become :class:`~steward.wire.jobs.Dependency` entries, each with the SHA-256 and size of the local
file (read in chunks, never whole; a large file's hash is remembered between submissions by
:mod:`steward.client.file_hashes`), and a ``requirements`` argument (a list of lines or a
requirements file) becomes the spec's ``requirements``. Everything is read before any request
is made: a missing or unreadable file is a :class:`JobRejectedError` and nothing was sent.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from steward.client.file_hashes import MIN_SIZE, FileHashes, identity
from steward.errors import JobRejectedError
from steward.wire.jobs import Dependency, DependencyKind

CHUNK = 1 << 20
REMEMBERED = 1000
"""Files whose hash this process keeps in memory (every size): a program that submits the
same files again and again reads each once, until it changes (its ``stat`` identity)."""

_remembered: dict[tuple[str, tuple[int, ...]], tuple[str, int]] = {}
_remembered_lock = threading.Lock()


@dataclass(frozen=True)
class LocalFile:
    """A file a job names: where it is here, and the spec entry that describes it."""

    path: Path
    dependency: Dependency

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes, CHUNK at a time (a new reading each call, for retries)."""
        with self.path.open("rb") as source:
            while chunk := source.read(CHUNK):
                yield chunk


def collect(
    *,
    py_files: Sequence[str | Path] = (),
    files: Sequence[str | Path] = (),
    archives: Sequence[str] = (),
    jars: Sequence[str | Path] = (),
) -> list[LocalFile]:
    """Every named file, hashed, in spark-submit's order of options."""
    found = [_local(DependencyKind.PY_FILE, Path(p)) for p in py_files]
    found += [_local(DependencyKind.FILE, Path(p)) for p in files]
    for spelled in archives:
        path, _, alias = str(spelled).partition("#")
        found.append(_local(DependencyKind.ARCHIVE, Path(path), alias or None))
    found += [_local(DependencyKind.JAR, Path(p)) for p in jars]
    return found


def requirement_lines(requirements: Sequence[str] | str | Path | None) -> list[str]:
    """The spec's ``requirements``: the given lines, or the lines of a requirements file.

    Blank lines and comments are dropped; a ``-r``/``-c`` include is refused (its file would
    not travel with the job).
    """
    if requirements is None:
        return []
    if isinstance(requirements, str | Path):
        path = Path(requirements)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise JobRejectedError(f"cannot read requirements file {path}: {exc}") from None
    else:
        lines = list(requirements)
    kept = [line.split(" #", 1)[0].strip() for line in lines]
    kept = [line for line in kept if line and not line.startswith("#")]
    for line in kept:
        if line.split()[0] in ("-r", "-c", "--requirement", "--constraint"):
            raise JobRejectedError(
                f"requirement {line!r} includes another file, which would not travel with the"
                " job; list its lines instead"
            )
    return kept


def _local(kind: DependencyKind, path: Path, alias: str | None = None) -> LocalFile:
    if not path.is_file():
        what = "does not exist" if not path.exists() else "is not a file"
        raise JobRejectedError(f"{kind.value} {path} {what}")
    try:
        sha256, size = _hash(path)
    except OSError as exc:
        raise JobRejectedError(f"cannot read {kind.value} {path}: {exc}") from None
    try:
        dependency = Dependency(
            kind=kind, filename=path.name, sha256=sha256, size=size, alias=alias
        )
    except ValueError as exc:
        first = str(exc).splitlines()
        raise JobRejectedError(
            f"{kind.value} {path}: {first[-1].strip() if first else exc} (file names and"
            " aliases may use letters, digits, '.', '_' and '-')"
        ) from None
    return LocalFile(path, dependency)


def _hash(path: Path) -> tuple[str, int]:
    """The file's SHA-256 and size, remembered in this process (by its ``stat`` identity)
    and, for a large file, between processes (:mod:`file_hashes`)."""
    stat = path.stat()
    key = (str(path.absolute()), tuple(identity(stat)))
    with _remembered_lock:
        known = _remembered.get(key)
    if known is not None:
        return known
    sha256, size = _hash_again(path, stat)
    if size == stat.st_size:
        with _remembered_lock:
            _remembered[key] = (sha256, size)
            while len(_remembered) > REMEMBERED:
                del _remembered[next(iter(_remembered))]
    return sha256, size


def _hash_again(path: Path, stat: os.stat_result) -> tuple[str, int]:
    hashes = FileHashes() if stat.st_size >= MIN_SIZE else None
    known = hashes.sha256_of(path, stat) if hashes else None
    if known is not None:
        return known, stat.st_size
    sha256, size = _digest(path)
    if hashes is not None and size == stat.st_size:
        hashes.remember(path, stat, sha256)
    return sha256, size


def _digest(path: Path) -> tuple[str, int]:
    with path.open("rb") as source:
        return hashlib.file_digest(source, "sha256").hexdigest(), source.tell()
