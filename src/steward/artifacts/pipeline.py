"""Pipeline artifacts as submitted: checking them on the way in, unpacking them on the way out.

A job's code travels as an :class:`~steward.wire.jobs.Artifact` (a ``.py`` file or a zipped
folder, base64 inside the job graph). This module owns both ends of that trip:

- :func:`build_artifact`, on the JobManager: turn an uploaded file into an Artifact, or refuse
  it with an :class:`ArtifactRejectedError` that names the problem (the REST API answers 400).
  A ``.py`` file must be UTF-8 and compile (it is compiled, never executed); a zip must be a
  valid archive without absolute paths, ``..`` members, symlinks, devices or FIFOs, within
  size, member and compression-ratio bounds (nested archives are never unpacked: a ``.zip``
  inside is a file like any other), with its entry module at the top or under one top-level folder;
- :func:`materialize`, on a TaskManager (or for a JobManager's initialize hook): check the
  checksum and write the file, or extract the zip safely, into a work directory; returns the
  absolute path a :class:`~steward.wire.runner_protocol.LaunchDocument` wants;
- :func:`may_define_initialize`: a cheap test so a leader need not start a hook process for a
  pipeline that cannot have an ``initialize`` hook.

What is an entry module, and how the runner imports the code: :mod:`steward.runtime.artifact`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import importlib.machinery
import io
import logging
import os
import re
import shutil
import stat
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO

from steward.artifacts import programs as program
from steward.artifacts.programs import ENTRY_MODULE_FILES, INITIALIZE_HOOK, module_name_for
from steward.errors import CorruptStateError, JobRejectedError
from steward.wire.jobs import Artifact, ArtifactKind, JobSpec

log = logging.getLogger(__name__)

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
"""A zip may unpack to at most this many bytes (a zip bomb is refused at submission)."""
MAX_MEMBERS = 10_000
"""A zip may hold at most this many entries."""
MAX_RATIO = 200
"""An entry may inflate at most this many times its compressed size, once over
:data:`RATIO_FLOOR` bytes (a zip bomb is refused at submission, before anything inflates)."""
RATIO_FLOOR = 1 << 20

_SUFFIXES = {".py": ArtifactKind.PYTHON_FILE, ".zip": ArtifactKind.ZIPPED_FOLDER}
_FILENAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_MARKER = ".steward-artifact"
_COPY_CHUNK = 1 << 20


class ArtifactRejectedError(JobRejectedError):
    """A submitted artifact is unusable: wrong kind, does not compile, unsafe or bad zip."""


# ---------------------------------------------------------------- submission


def build_artifact(filename: str, data: bytes, entrypoint: str = "main") -> Artifact:
    """Check an uploaded pipeline and wrap it as an :class:`Artifact` (base64 + sha256).

    ``entrypoint`` is the job's (``function`` or ``module:function``): with a module part, a
    zip must contain that module instead of an entry module. Raises
    :class:`ArtifactRejectedError` with a message naming the file and the problem.
    """
    kind = _kind_of(filename)
    if kind is ArtifactKind.PYTHON_FILE:
        _check_python_file(filename, data)
    else:
        _check_zip(filename, data, _module_part(entrypoint))
    return Artifact(
        filename=filename,
        kind=kind,
        sha256=hashlib.sha256(data).hexdigest(),
        data_b64=base64.b64encode(data).decode("ascii"),
    )


def _kind_of(filename: str) -> ArtifactKind:
    if not _FILENAME.fullmatch(filename) or len(filename) > 255:
        raise ArtifactRejectedError(
            f"artifact name {filename!r} is not a plain file name (letters, digits, '.', '_'"
            " or '-'; no folders)"
        )
    kind = _SUFFIXES.get(PurePosixPath(filename).suffix.lower())
    if kind is None:
        raise ArtifactRejectedError(
            f"artifact {filename}: only a .py file or a .zip of a folder can be submitted"
        )
    return kind


def _module_part(entrypoint: str) -> str:
    module, _, _function = entrypoint.rpartition(":")
    return module


def _check_python_file(filename: str, data: bytes) -> None:
    name = module_name_for(Path(filename))
    if _is_installed_module(name):
        raise ArtifactRejectedError(
            f"pipeline file {filename} has the name of an installed module ({name});"
            " rename the file"
        )
    _compile(filename, data)


@functools.lru_cache(maxsize=1024)
def _is_installed_module(name: str) -> bool:
    # The runner refuses such a file (it would shadow the real module). Look where the runner
    # would look: not in this process's working directory, which the runner drops from sys.path.
    # Remembered per name: sys.path does not change, and the search costs about 20 system
    # calls (a getcwd and stats per entry), on every submission before.
    if name in sys.builtin_module_names or name in sys.stdlib_module_names:
        return True
    path = [p for p in sys.path if p not in ("", os.getcwd())]
    return importlib.machinery.PathFinder.find_spec(name, path) is not None


def _compile(where: str, data: bytes) -> None:
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactRejectedError(
            f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        compile(source, where, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = f":{exc.lineno}" if exc.lineno else ""
        raise ArtifactRejectedError(f"{where}{line}: {type(exc).__name__}: {exc.msg}") from None
    except ValueError as exc:  # e.g. source with NUL bytes
        raise ArtifactRejectedError(f"{where}: cannot be compiled: {exc}") from None


def _check_zip(filename: str, data: bytes, module: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = _safe_members(filename, archive.infolist())
            root = _root_of(filename, [m.filename for m in members], module)
            for member in members:
                if member.filename.endswith(".py") and member.filename.startswith(root):
                    _compile(f"{filename}:{member.filename}", archive.read(member))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise ArtifactRejectedError(f"artifact {filename}: not a valid zip file ({exc})") from None


def _safe_members(filename: str, infos: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The file members of a zip, or ArtifactRejectedError if any entry is unsafe."""
    if len(infos) > MAX_MEMBERS:
        raise ArtifactRejectedError(
            f"artifact {filename}: {len(infos)} entries; at most {MAX_MEMBERS} are allowed"
        )
    total = 0
    files = []
    for info in infos:
        _check_member_name(filename, info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArtifactRejectedError(
                f"artifact {filename}: {info.filename} is a symbolic link; links are refused"
            )
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ArtifactRejectedError(
                f"artifact {filename}: {info.filename} is a device, FIFO or socket; a zip may"
                " hold only files and folders"
            )
        total += info.file_size
        if total > MAX_UNPACKED_BYTES:
            raise ArtifactRejectedError(
                f"artifact {filename}: unpacks to more than {MAX_UNPACKED_BYTES} bytes"
            )
        _check_ratio(filename, info)
        if not info.is_dir():
            files.append(info)
    return files


def _check_ratio(filename: str, info: zipfile.ZipInfo) -> None:
    # A zip bomb's entries inflate thousands of times; real code and data rarely 20 times.
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise ArtifactRejectedError(
            f"artifact {filename}: {info.filename} inflates {info.file_size} bytes from"
            f" {info.compress_size} (more than {MAX_RATIO} times): refused as a zip bomb"
        )


def _check_member_name(filename: str, name: str) -> None:
    parts = name.split("/")
    if (
        name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or re.match(r"^[A-Za-z]:", name)
        or any(part in ("..", ".") for part in parts)
    ):
        raise ArtifactRejectedError(
            f"artifact {filename}: unsafe entry {name!r} (absolute, '..' or '.' paths are refused)"
        )


def _root_of(filename: str, names: Iterable[str], module: str) -> str:
    """The prefix (``""`` or ``"folder/"``) of the folder that holds the pipeline's modules."""
    names = set(names)
    tops = {name.split("/", 1)[0] for name in names if "/" in name}
    candidates = [""]
    if len(tops) == 1 and not any("/" not in name for name in names):
        candidates.append(f"{next(iter(tops))}/")
    for prefix in candidates:
        if _holds_entry(names, prefix, module):
            return prefix
    wanted = (
        f"module {module!r} ({module.replace('.', '/')}.py or a package)"
        if module
        else f"an entry module ({', '.join(ENTRY_MODULE_FILES)})"
    )
    raise ArtifactRejectedError(
        f"artifact {filename}: no {wanted} at the top of the zip or under a single top-level folder"
    )


def _holds_entry(names: set[str], prefix: str, module: str) -> bool:
    if not module:
        return any(f"{prefix}{entry}" in names for entry in ENTRY_MODULE_FILES)
    path = prefix + module.replace(".", "/")
    return f"{path}.py" in names or f"{path}/__init__.py" in names


def check_submission(filename: str, data: bytes, spec: JobSpec) -> tuple[Artifact, JobSpec]:
    """Check an uploaded pipeline against its spec: the artifact, and the spec with its
    program kind resolved (:func:`steward.artifacts.programs.resolve`; never ``auto``).

    Raises :class:`~steward.errors.JobRejectedError` (the REST API answers 400) for anything
    that would fail every attempt: a bad file, a syntax error, a missing entrypoint.
    """
    artifact = build_artifact(filename, data, spec.entrypoint)
    where, source = _entry_source(filename, data, spec.entrypoint)
    kind = program.resolve(source, where, spec.program, spec.entrypoint)
    return artifact, spec.model_copy(update={"program": kind})


def _entry_source(filename: str, data: bytes, entrypoint: str) -> tuple[str, str]:
    """The entry module's name (for messages) and source text; the artifact is checked."""
    if _kind_of(filename) is ArtifactKind.PYTHON_FILE:
        return filename, data.decode("utf-8")
    module = _module_part(entrypoint)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = {m.filename for m in _safe_members(filename, archive.infolist())}
        root = _root_of(filename, names, module)
        if module:
            path = root + module.replace(".", "/")
            candidates: Iterable[str] = (f"{path}.py", f"{path}/__init__.py")
        else:
            candidates = (root + entry for entry in ENTRY_MODULE_FILES)
        entry = next(name for name in candidates if name in names)
        return f"{filename}:{entry}", archive.read(entry).decode("utf-8")


# ---------------------------------------------------------------- unpacking


def decode(artifact: Artifact) -> bytes:
    """The artifact's bytes, checked against its sha256; CorruptStateError if they differ."""
    try:
        data = base64.b64decode(artifact.data_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CorruptStateError(f"artifact {artifact.filename}: invalid base64 ({exc})") from exc
    if hashlib.sha256(data).hexdigest() != artifact.sha256:
        raise CorruptStateError(f"artifact {artifact.filename}: sha256 does not match its data")
    return data


def materialize(artifact: Artifact, into: Path, entrypoint: str = "main") -> Path:
    """Write ``artifact`` into the folder ``into``; return the absolute artifact path.

    That is the ``.py`` file, or the folder that holds the entry module (``into`` or its
    single top-level folder). Idempotent: a second call with the same artifact only returns
    the path; ``into`` holding anything else is emptied first. Raises
    :class:`CorruptStateError` (checksum) or :class:`ArtifactRejectedError` (unsafe zip).
    """
    into = into.resolve()
    marker, identity = into / _MARKER, f"{artifact.sha256} {artifact.kind} {artifact.filename}"
    if marker.is_file() and marker.read_text().strip() == identity:
        return _artifact_path(artifact, into, entrypoint)
    data = decode(artifact)
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(mode=0o700, parents=True)  # the job's code is its TaskManager user's alone
    if artifact.kind is ArtifactKind.PYTHON_FILE:
        _kind_of(artifact.filename)  # a corrupt graph must not name a path outside `into`
        with _private_file(into / artifact.filename) as sink:
            sink.write(data)
    else:
        _extract(artifact.filename, data, into)
    path = _artifact_path(artifact, into, entrypoint)
    marker.write_text(identity + "\n")  # written last: a half-done unpack is redone
    log.info("artifact materialized file=%s path=%s", artifact.filename, path)
    return path


def _artifact_path(artifact: Artifact, into: Path, entrypoint: str) -> Path:
    if artifact.kind is ArtifactKind.PYTHON_FILE:
        return into / artifact.filename
    names = {
        path.relative_to(into).as_posix()
        for path in into.rglob("*")
        if path.is_file() and path.name != _MARKER
    }
    return into / _root_of(artifact.filename, names, _module_part(entrypoint))


def _extract(filename: str, data: bytes, into: Path) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            budget = MAX_UNPACKED_BYTES
            for member in _safe_members(filename, archive.infolist()):
                target = into.joinpath(*member.filename.split("/"))
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                with archive.open(member) as source, _private_file(target) as sink:
                    budget -= _copy_bounded(source, sink, budget, filename)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise ArtifactRejectedError(f"artifact {filename}: not a valid zip file ({exc})") from None


def _private_file(path: Path) -> IO[bytes]:
    """``path`` opened for writing, created mode 0600."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def _copy_bounded(source: IO[bytes], sink: IO[bytes], budget: int, filename: str) -> int:
    # The sizes in a zip's directory are claims: count what really comes out.
    copied = 0
    while chunk := source.read(_COPY_CHUNK):
        copied += len(chunk)
        if copied > budget:
            raise ArtifactRejectedError(
                f"artifact {filename}: unpacks to more than {MAX_UNPACKED_BYTES} bytes"
            )
        sink.write(chunk)
    return copied


# ---------------------------------------------------------------- cheap inspection


def may_define_initialize(artifact: Artifact) -> bool:
    """False only if no Python source of the artifact contains the text ``initialize``.

    A cheap, conservative test: True does not mean there is a hook, False means there cannot
    be one (so the leader need not start a process to run it).
    """
    data = decode(artifact)
    needle = INITIALIZE_HOOK.encode()
    if artifact.kind is ArtifactKind.PYTHON_FILE:
        return needle in data
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return any(
                needle in archive.read(member)
                for member in _safe_members(artifact.filename, archive.infolist())
                if member.filename.endswith(".py")
            )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError):
        return True  # cannot tell: let the hook process say what is wrong
