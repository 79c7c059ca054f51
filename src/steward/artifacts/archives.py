"""A job's archives (``--archives``), checked and unpacked safely: .zip, .tar, .tar.gz/.tgz,
.tar.bz2, .tar.xz.

A JobManager checks each archive a submission names with :func:`inspect` (reading it, writing
nothing), so that a hostile one is refused with 400 and no job stored; a TaskManager unpacks
it with :func:`unpack`, which applies the same rules again, and counts the bytes a zip really
inflates. An archive is user data, so unpacking it must not be able to touch anything outside
its folder or exhaust the disk:

- no member may be absolute or contain ``..``; no member may be written through a link;
- no device files, FIFOs or sockets; hard links only to members inside the folder;
- symbolic links must stay inside the folder, with one exception: a link under ``bin/`` whose
  name starts with ``python`` and whose target is an absolute path, which is how venv-pack
  archives point at the base interpreter (PySpark's packaging guide relies on it). Such a
  link only names a file; nothing is ever written through it;
- at most :data:`MAX_MEMBERS` members and ``max_bytes`` bytes written (a zip bomb is cut off
  by the bytes actually inflated, not by what its directory claims), and no zip member that
  claims to inflate more than :data:`MAX_RATIO` times; archives inside are files, never
  unpacked.

Tar archives go through :func:`tarfile.data_filter` (the standard library's safe filter).
A refused archive is an :class:`ArchiveRejectedError`, a permanent failure: retrying the same
bytes cannot help.
"""

from __future__ import annotations

import logging
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from steward.errors import StewardError

log = logging.getLogger(__name__)

MAX_MEMBERS = 500_000
DEFAULT_MAX_BYTES = 32 << 30
MAX_RATIO = 1000
"""A zip member may inflate at most this many times its compressed size once over
:data:`RATIO_FLOOR` bytes (data compresses well, but not like a zip bomb's zeros)."""
RATIO_FLOOR = 1 << 20
_CHUNK = 1 << 20
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


class ArchiveRejectedError(StewardError):
    """An archive cannot be unpacked safely, or is not an archive of a known kind."""

    permanent = True


def inspect(source: IO[bytes], name: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Refuse (:class:`ArchiveRejectedError`) an archive :func:`unpack` would refuse, by its
    members' names, kinds, links and claimed sizes, writing nothing. ``source`` is the archive
    (seekable for a zip; a tar is read once, as a stream), ``name`` its file name (the kind)."""
    lower = name.lower()
    nowhere = Path("/nonexistent/steward-archive-check")  # members are judged lexically
    try:
        if lower.endswith((".zip", ".jar")):
            with zipfile.ZipFile(source) as zipped:
                infos = zipped.infolist()
                _check_count(name, len(infos))
                claimed = 0
                for info in infos:
                    _zip_target(name, info, nowhere)
                    claimed += info.file_size
                    if claimed > max_bytes:
                        raise ArchiveRejectedError(
                            f"archive {name}: unpacks to more than {max_bytes} bytes"
                        )
        elif lower.endswith(_TAR_SUFFIXES):
            check = _TarFilter(name, max_bytes)
            with tarfile.open(fileobj=source, mode="r|*") as tar:
                for member in tar:
                    check(member, str(nowhere))
        else:
            raise ArchiveRejectedError(
                f"archive {name}: not a .zip, .tar, .tar.gz, .tgz, .tar.bz2 or .tar.xz"
            )
    except (EOFError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise ArchiveRejectedError(f"archive {name} cannot be read: {exc}") from exc


def _check_count(archive: str, members: int) -> None:
    if members > MAX_MEMBERS:
        raise ArchiveRejectedError(f"archive {archive}: more than {MAX_MEMBERS} members")


def unpack(archive: Path, into: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Unpack ``archive`` (kind from its name) into the new folder ``into``."""
    name = archive.name.lower()
    into.mkdir(parents=True)
    try:
        if name.endswith((".zip", ".jar")):
            _unzip(archive, into, max_bytes)
        elif name.endswith(_TAR_SUFFIXES):
            _untar(archive, into, max_bytes)
        else:
            raise ArchiveRejectedError(
                f"archive {archive.name}: not a .zip, .tar, .tar.gz, .tgz, .tar.bz2 or .tar.xz"
            )
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise ArchiveRejectedError(f"archive {archive.name} cannot be unpacked: {exc}") from exc
    log.info("archive unpacked archive=%s into=%s", archive.name, into)


# ---------------------------------------------------------------- tar


class _TarFilter:
    """tarfile's ``data`` filter plus the member and byte bounds and the interpreter links."""

    def __init__(self, archive: str, max_bytes: int) -> None:
        self.archive = archive
        self.max_bytes = max_bytes
        self.members = 0
        self.written = 0

    def __call__(self, member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo:
        self.members += 1
        _check_count(self.archive, self.members)
        self.written += member.size if member.isreg() else 0
        if self.written > self.max_bytes:
            raise ArchiveRejectedError(
                f"archive {self.archive}: unpacks to more than {self.max_bytes} bytes"
            )
        try:
            return tarfile.data_filter(member, destination)
        except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError) as exc:
            if member.issym() and _is_interpreter_link(member.name, member.linkname):
                # As data_filter does: no owner taken from the archive (typeshed says int/str,
                # tarfile documents None as "leave unset").
                return member.replace(
                    uid=None,  # type: ignore[arg-type]
                    gid=None,  # type: ignore[arg-type]
                    uname=None,  # type: ignore[arg-type]
                    gname=None,  # type: ignore[arg-type]
                    deep=False,
                )
            raise ArchiveRejectedError(f"archive {self.archive}: {exc}") from None
        except tarfile.FilterError as exc:
            raise ArchiveRejectedError(f"archive {self.archive}: {exc}") from None


def _is_interpreter_link(name: str, target: str) -> bool:
    path = PurePosixPath(name)
    return (
        path.parent.name == "bin"
        and path.name.startswith("python")
        and ".." not in path.parts
        and (
            PurePosixPath(target).is_absolute()
            or ("/" not in target and target.startswith("python"))  # python3 -> python
        )
    )


def _untar(archive: Path, into: Path, max_bytes: int) -> None:
    with tarfile.open(archive, "r:*") as tar:
        tar.extractall(into, filter=_TarFilter(archive.name, max_bytes))


# ---------------------------------------------------------------- zip


def _unzip(archive: Path, into: Path, max_bytes: int) -> None:
    budget = max_bytes
    with zipfile.ZipFile(archive) as zipped:
        infos = zipped.infolist()
        _check_count(archive.name, len(infos))
        for info in infos:
            target = _zip_target(archive.name, info, into)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, target.open("xb") as sink:
                budget -= _copy_bounded(source, sink, budget, archive.name, max_bytes)
            if (info.external_attr >> 16) & 0o111:
                target.chmod(0o755)


def _zip_target(archive: str, info: zipfile.ZipInfo, into: Path) -> Path:
    name = info.filename
    mode = info.external_attr >> 16
    parts = name.rstrip("/").split("/")
    if name.startswith("/") or "\\" in name or "\x00" in name or ".." in parts or ":" in parts[0]:
        raise ArchiveRejectedError(f"archive {archive}: unsafe member {name!r}")
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ArchiveRejectedError(
            f"archive {archive}: {name!r} is a link or special file; a zip may hold only"
            " files and folders"
        )
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise ArchiveRejectedError(
            f"archive {archive}: {name!r} inflates {info.file_size} bytes from"
            f" {info.compress_size} (more than {MAX_RATIO} times): refused as a zip bomb"
        )
    target = into.joinpath(*[part for part in parts if part not in ("", ".")])
    if not target.resolve().is_relative_to(into.resolve()):
        raise ArchiveRejectedError(f"archive {archive}: member {name!r} leaves its folder")
    return target


def _copy_bounded(source: IO[bytes], sink: IO[bytes], budget: int, archive: str, limit: int) -> int:
    # A zip's directory states sizes; count what really comes out.
    copied = 0
    while chunk := source.read(_CHUNK):
        copied += len(chunk)
        if copied > budget:
            raise ArchiveRejectedError(f"archive {archive}: unpacks to more than {limit} bytes")
        sink.write(chunk)
    return copied
