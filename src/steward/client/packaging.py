"""Turning a pipeline path into the artifact a submission uploads.

- a ``.py`` file is sent as it is;
- a folder is zipped in memory, paths relative to the folder, without ``__pycache__``,
  compiled files or hidden entries; the archive is reproducible (fixed timestamps, sorted
  entries), so the same folder always gives the same bytes and the same sha256;
- a ``.zip`` is sent as it is, once it is known to be a zip archive.

Anything else is a :class:`JobRejectedError` raised before any request is made.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from steward.errors import JobRejectedError
from steward.wire.values import new_job_id

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class PipelineArtifact:
    """The bytes to upload and the file name that tells the JobManager what they are."""

    filename: str
    data: bytes


def package(path: Path) -> PipelineArtifact:
    """The artifact for the pipeline at ``path`` (a .py file, a folder or a .zip)."""
    if path.is_dir():
        return PipelineArtifact(f"{_folder_name(path)}.zip", zip_folder(path))
    if not path.exists():
        raise JobRejectedError(f"pipeline {path} does not exist")
    if not path.is_file():
        raise JobRejectedError(f"pipeline {path} is neither a file nor a folder")
    if path.suffix == ".py":
        return PipelineArtifact(path.name, path.read_bytes())
    if path.suffix == ".zip":
        if not zipfile.is_zipfile(path):
            raise JobRejectedError(f"pipeline {path} is not a zip archive")
        return PipelineArtifact(path.name, path.read_bytes())
    raise JobRejectedError(
        f"pipeline {path} must be a .py file, a folder with an entry module, or a .zip of one"
    )


def zip_folder(folder: Path) -> bytes:
    """A zip of ``folder``'s files, paths relative to it (see the module docstring)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and _wanted(p.relative_to(folder)))
    if not files:
        raise JobRejectedError(f"pipeline folder {folder} has no files to submit")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            info = zipfile.ZipInfo(file.relative_to(folder).as_posix(), _FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (file.stat().st_mode & 0o777) << 16
            archive.writestr(info, file.read_bytes())
    return buffer.getvalue()


def default_job_id(pipeline: Path | str) -> str:
    """``<pipeline stem>-<12 hex>``: an id the client picks, so a retried submit is recognised."""
    return new_job_id(Path(pipeline).stem or Path(pipeline).absolute().name)


def _wanted(relative: Path) -> bool:
    parts = relative.parts
    if any(part.startswith(".") or part == "__pycache__" for part in parts):
        return False
    return relative.suffix not in _SKIPPED_SUFFIXES


def _folder_name(folder: Path) -> str:
    return folder.absolute().resolve().name or "pipeline"
