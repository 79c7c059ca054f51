"""Paths under a job's checkpoint dir, and the few filesystem moves a stage needs.

``checkpoint_dir`` is a local path or a URL that both fsspec (for these moves) and Spark (for
reading and writing the data) understand: ``/data/ck``, ``file:///data/ck``, ``hdfs://...``.
Object stores need the same scheme for both (e.g. ``s3a://`` with an fsspec alias); a local
path or ``file://`` URL needs nothing. Errors surface as :class:`StageStorageError` naming
the path, never as raw fsspec exceptions.
"""

from __future__ import annotations

import logging
from typing import Any

from steward.errors import StewardError

log = logging.getLogger(__name__)


class StageStorageError(StewardError):
    """A stage could not be moved into place or checked in the checkpoint dir."""


def join(base: str, *parts: str) -> str:
    """``base/part/...`` for a local path or a URL alike."""
    return "/".join([base.rstrip("/"), *parts])


def _fs(url: str) -> tuple[Any, str]:
    # Imported here: every attempt's runner imports this module, few of them move a stage.
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]  # fsspec is untyped
    except (ImportError, ValueError) as exc:
        raise StageStorageError(f"cannot open {url!r}: {exc}") from exc


def exists(url: str) -> bool:
    fs, path = _fs(url)
    try:
        return bool(fs.exists(path))
    except OSError as exc:
        raise StageStorageError(f"cannot check {url}: {exc}") from exc


def replace(source: str, target: str) -> None:
    """Move the folder ``source`` to ``target``, replacing whatever ``target`` held.

    A rename on a local filesystem or HDFS: a reader never sees a half-written ``target``.
    An old ``target`` can exist only when an earlier attempt wrote the stage but died
    before its checkpoint was recorded; it was never reused, so it is safe to drop.
    """
    fs, source_path = _fs(source)
    _, target_path = _fs(target)
    try:
        if fs.exists(target_path):
            log.info("replacing unrecorded stage data path=%s", target)
            fs.rm(target_path, recursive=True)
        fs.mv(source_path, target_path, recursive=True)
    except OSError as exc:
        raise StageStorageError(f"cannot move {source} to {target}: {exc}") from exc


def remove(url: str) -> bool:
    """Delete the folder or file at ``url`` if there is one; True if something was deleted."""
    fs, path = _fs(url)
    try:
        if not fs.exists(path):
            return False
        fs.rm(path, recursive=True)
    except OSError as exc:
        raise StageStorageError(f"cannot delete {url}: {exc}") from exc
    return True
