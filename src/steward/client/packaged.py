"""A client's packaged pipelines, kept while their files are unchanged.

``Client.submit`` sends the pipeline in every submission's body (base64). Submitting the same
pipeline a thousand times (an orchestrator's burst) read the file, zipped a folder again and
encoded it each time; :class:`Pipelines` keeps the last artifact of each path with the
identity of every file it was made from (:func:`steward.client.file_hashes.identity`: device,
inode, size, modification and change times), and makes it again only when one changed, or a
file came or went. A folder still costs a walk and a ``stat`` per file, not a read and a zip.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from pathlib import Path

from steward.client import packaging
from steward.client.file_hashes import identity

MAX_PIPELINES = 64
"""Paths remembered per client; the oldest is forgotten past it."""

Signature = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True)
class Packaged:
    filename: str
    data_b64: str
    """The artifact as a submission's body carries it."""

    @property
    def fields(self) -> tuple[str, str]:
        """``(filename, data_b64)``: :func:`steward.client.submission.prepare`'s."""
        return self.filename, self.data_b64


class Pipelines:
    """``packaged(path)``: the artifact of the pipeline at ``path``, made again only if its
    files changed (:func:`steward.client.packaging.package` otherwise)."""

    def __init__(self) -> None:
        self._kept: dict[Path, tuple[Signature, Packaged]] = {}
        self._lock = threading.Lock()

    def packaged(self, path: Path) -> Packaged:
        key = path.absolute()
        signature = _signature(path)
        with self._lock:
            kept = self._kept.get(key)
        if signature is not None and kept is not None and kept[0] == signature:
            return kept[1]
        artifact = packaging.package(path)
        made = Packaged(artifact.filename, base64.b64encode(artifact.data).decode("ascii"))
        if signature is not None:
            with self._lock:
                self._kept.pop(key, None)
                self._kept[key] = (signature, made)
                while len(self._kept) > MAX_PIPELINES:
                    del self._kept[next(iter(self._kept))]
        return made


def _signature(path: Path) -> Signature | None:
    """The identity of every file ``path`` is made from (None: it cannot be read now, and
    packaging will say why)."""
    try:
        if not path.is_dir():
            return (("", tuple(identity(path.stat()))),)
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return tuple((str(p.relative_to(path)), tuple(identity(p.stat()))) for p in files)
    except OSError:
        return None
