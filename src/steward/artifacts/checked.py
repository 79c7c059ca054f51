"""Pipelines already checked, so that the same file submitted again is not checked again.

A platform submits the same pipeline file thousands of times with other arguments. Checking
it (:func:`~steward.artifacts.pipeline.check_submission`: compile the source, parse it for
its program kind, hash and base64 it) is the same work each time, for the same answer. The
cache keeps the answer of an accepted check per (file name, SHA-256 of the bytes, entrypoint,
program kind asked for): everything the check reads. A refused pipeline is not kept (its
error is cheap to find again). Bounded by entries and by bytes of base64 held, least
recently used out first; a miss costs only the check.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from steward.wire.jobs import Artifact, JobSpec, ProgramKind

from .pipeline import check_submission

MAX_ENTRIES = 256
MAX_BYTES = 64 * 1024 * 1024

_Key = tuple[str, str, str, ProgramKind]


class CheckedArtifacts:
    """``check(filename, data, spec)``: :func:`check_submission`, remembered when accepted."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[_Key, tuple[Artifact, ProgramKind]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0

    def check(self, filename: str, data: bytes, spec: JobSpec) -> tuple[Artifact, JobSpec]:
        """The artifact and the spec with its program kind resolved; JobRejectedError if the
        pipeline is refused."""
        key = (filename, hashlib.sha256(data).hexdigest(), spec.entrypoint, spec.program)
        with self._lock:
            known = self._entries.get(key)
            if known is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if known is not None:
            artifact, kind = known
            return artifact, spec.model_copy(update={"program": kind})
        artifact, checked = check_submission(filename, data, spec)
        self._remember(key, artifact, checked.program)
        return artifact, checked

    def _remember(self, key: _Key, artifact: Artifact, kind: ProgramKind) -> None:
        size = len(artifact.data_b64)
        if size > self._max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (artifact, kind)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                _, (dropped, _) = self._entries.popitem(last=False)
                self._bytes -= len(dropped.data_b64)
