"""What ``StewardSubmitOperator`` sends: its options as Steward's job spec, in stable bytes.

``POST /v1/jobs`` is idempotent by job id: the leader keeps the sha256 of the body that created
a job, and a second ``POST`` of the same id answers 409 with that digest. A retried task must
therefore send the very same bytes as the try that died, so everything here is deterministic:
the JSON is serialised with sorted keys and fixed separators, a pipeline folder is zipped with
fixed timestamps in sorted order, and each named file is described by its content's SHA-256.

The files a job names (``py_files``, ``files``, ``archives``) travel by content: the spec names
each by hash and size and the hook uploads only those the cluster does not have
(``HEAD /v1/contents/<sha256>``), as Steward's own client does. What is left out of this
subset (``jars``, a file-hash cache between submissions) is in the provider's README.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steward_airflow.job_ids import check_job_id

CHUNK = 1 << 20
_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_RESTART_KINDS = ("none", "fixed-delay", "exponential-delay")


class SubmissionError(ValueError):
    """The operator's options cannot make a job: nothing was sent."""


@dataclass(frozen=True)
class LocalFile:
    """A file the job names: where it is here and how the spec describes it."""

    path: Path
    kind: str
    sha256: str
    size: int
    alias: str | None = None

    def dependency(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "kind": self.kind,
            "filename": self.path.name,
            "sha256": self.sha256,
            "size": self.size,
        }
        if self.alias is not None:
            entry["alias"] = self.alias
        return entry

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes, a chunk at a time (a new reading on each call)."""
        with self.path.open("rb") as source:
            while chunk := source.read(CHUNK):
                yield chunk


@dataclass(frozen=True)
class Submission:
    """One job's ``POST /v1/jobs`` body, the files it names, and the body's digest."""

    job_id: str
    body: bytes
    files: tuple[LocalFile, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


def build(
    *,
    job_id: str,
    application: str | Path,
    application_args: Sequence[Any] = (),
    py_files: Sequence[str | Path] = (),
    files: Sequence[str | Path] = (),
    archives: Sequence[str] = (),
    requirements: Sequence[str] | None = None,
    conf: Mapping[str, Any] | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    restart: str | Mapping[str, Any] | None = None,
    timeout: float | str | None = None,
    env: Mapping[str, str] | None = None,
    slots: int | None = None,
    proxy_user: str | None = None,
) -> Submission:
    """The submission of ``application`` (a .py file, a .zip, or a folder) as ``job_id``."""
    try:
        check_job_id(job_id)
    except ValueError as exc:
        raise SubmissionError(str(exc)) from None
    filename, data = artifact(Path(application))
    local = [_local("py-file", Path(p)) for p in py_files]
    local += [_local("file", Path(p)) for p in files]
    for spelled in archives:
        path, _, alias = str(spelled).partition("#")
        local.append(_local("archive", Path(path), alias or None))
    spec: dict[str, Any] = {"job_id": job_id, "args": [str(a) for a in application_args]}
    optional = {
        "name": name,
        "labels": dict(labels) if labels else None,
        "spark_conf": spark_conf(conf) if conf else None,
        "restart_strategy": restart_strategy(restart) if restart is not None else None,
        "timeout": timeout,
        "env": dict(env) if env else None,
        "slots": slots,
        "proxy_user": proxy_user,
        "requirements": list(requirements) if requirements else None,
        "dependencies": [f.dependency() for f in local] or None,
    }
    spec.update({key: value for key, value in optional.items() if value is not None})
    document = {
        "spec": spec,
        "artifact": {"filename": filename, "data_b64": base64.b64encode(data).decode("ascii")},
    }
    body = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return Submission(job_id, body, tuple(local))


def spark_conf(conf: Mapping[str, Any]) -> dict[str, str]:
    """Spark settings as Steward takes them: strings, booleans spelled as Spark does."""
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in conf.items()}


def restart_strategy(restart: str | Mapping[str, Any]) -> dict[str, Any]:
    """``"none"``, ``"fixed-delay"``, ``"exponential-delay"`` or Steward's own JSON form
    (``{"kind": "fixed-delay", "attempts": 3, "delay": 10}``)."""
    strategy = {"kind": restart} if isinstance(restart, str) else dict(restart)
    if strategy.get("kind") not in _RESTART_KINDS:
        raise SubmissionError(
            f"restart {restart!r}: its kind must be one of {', '.join(_RESTART_KINDS)}"
        )
    return strategy


def artifact(path: Path) -> tuple[str, bytes]:
    """The file name and bytes Steward runs: a .py or .zip as it is, a folder zipped."""
    if path.is_dir():
        name = path.resolve().name or "pipeline"
        return f"{name}.zip", zip_folder(path)
    if not path.is_file():
        raise SubmissionError(f"application {path} does not exist or is not a file")
    if path.suffix not in (".py", ".zip"):
        raise SubmissionError(f"application {path} must be a .py file, a .zip or a folder")
    return path.name, path.read_bytes()


def zip_folder(folder: Path) -> bytes:
    """The folder's files (no hidden ones, no ``__pycache__``), the same bytes every time."""
    found = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(
            part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts
        )
        and p.suffix not in (".pyc", ".pyo")
    )
    if not found:
        raise SubmissionError(f"application folder {folder} has no files")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in found:
            info = zipfile.ZipInfo(file.relative_to(folder).as_posix(), _FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (file.stat().st_mode & 0o777) << 16
            archive.writestr(info, file.read_bytes())
    return buffer.getvalue()


def _local(kind: str, path: Path, alias: str | None = None) -> LocalFile:
    if not path.is_file():
        raise SubmissionError(f"{kind} {path} does not exist or is not a file")
    with path.open("rb") as source:
        digest = hashlib.file_digest(source, "sha256").hexdigest()
        size = source.tell()
    return LocalFile(path, kind, digest, size, alias)
