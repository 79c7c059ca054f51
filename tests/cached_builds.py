"""Heavy test tools built once per machine and reused: a folder under
``~/.cache/steward-tests/<name>-<sha256 of its inputs>`` (changed inputs are a new folder),
made behind a file lock so concurrent sessions and xdist workers never build it twice, and
marked ``.complete`` once finished (a build cut short is redone). The Airflow venv and the
OpenID provider's npm packages are made so."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "steward-tests"


def built_once(name: str, inputs: bytes, build: Callable[[Path], None]) -> Path:
    """The folder of ``name`` for these ``inputs``, made by ``build(folder)`` if missing;
    ``build`` gets an empty folder's path (not yet created)."""
    root = cache_root() / f"{name}-{hashlib.sha256(inputs).hexdigest()[:16]}"
    with locked(root):
        if not (root / ".complete").exists():
            shutil.rmtree(root, ignore_errors=True)
            build(root)
            (root / ".complete").touch()
    return root


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the lock of cached folder ``root`` (a file beside it)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with root.with_name(root.name + ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
