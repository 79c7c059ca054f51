"""What ``results/<job-id>`` holds, in either of its two formats, and where a body lives.

Since results moved to blob storage (rule 7) the node is a :class:`JobResultIndex`: state,
cleanup status, finish time and the body's SHA-256, which also names the body's blob
(``results/<job-id>/<sha256>``, so a body is content-addressed: writing it again writes the same
bytes, which makes migration and retries idempotent, and a deposed leader's body, which
differs at least by its epoch, can never replace the one an index names). Before, the node
held the whole :class:`JobResultEntry`; such *legacy* entries are read as they are until the
leader migrates them (:mod:`steward.store.results`).

The cleanup's CLEAN mark is the index's last change, so its time is the node's ``mtime``:
no byte of the index is spent on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from steward.errors import CorruptStateError
from steward.wire.records import JobResultEntry, JobResultIndex
from steward.wire.states import CleanupStatus, TerminalState

BLOB_PREFIX = "results"


def body_key(job_id: str, sha256: str) -> str:
    """The blob key of a result body: content-addressed within the job's folder."""
    return f"{BLOB_PREFIX}/{job_id}/{sha256}"


@dataclass(frozen=True)
class ResultNode:
    """One decoded ``results/<job-id>`` node: an index, or a legacy entry with its body."""

    job_id: str
    version: int
    modified: float
    """The node's last change (seconds since the epoch): the CLEAN mark's time."""
    index: JobResultIndex | None = None
    legacy: JobResultEntry | None = None

    @property
    def state(self) -> TerminalState:
        return self.index.state if self.index is not None else self._legacy().state

    @property
    def status(self) -> CleanupStatus:
        return self.index.status if self.index is not None else self._legacy().status

    @property
    def finished_at(self) -> float:
        return self.index.finished_at if self.index is not None else self._legacy().finished_at

    @property
    def epoch(self) -> int | None:
        """The writer's epoch; None for an index (its body has it)."""
        return None if self.legacy is None else self.legacy.epoch

    @property
    def body_key(self) -> str | None:
        """Where the body is; None for a legacy entry (in the node itself)."""
        return None if self.index is None else body_key(self.job_id, self.index.sha256)

    def _legacy(self) -> JobResultEntry:
        assert self.legacy is not None  # one of the two is always set (decode)
        return self.legacy


def decode(job_id: str, data: bytes, stat: Any) -> ResultNode:
    """Decode a result node of either format; CorruptStateError if it is neither."""
    version, modified = int(stat.version), float(stat.mtime) / 1000.0
    if _is_index(data):
        index = JobResultIndex.from_json(data)
        return ResultNode(job_id, version, modified, index=index)
    entry = JobResultEntry.from_json(data)
    if entry.job_id != job_id:
        raise CorruptStateError(f"result of {job_id!r} holds the result of job {entry.job_id!r}")
    return ResultNode(job_id, version, modified, legacy=entry)


def with_index(body: JobResultEntry, node: ResultNode) -> JobResultEntry:
    """A body as the index says it is now: the status and CLEAN time live in the index."""
    assert node.index is not None
    cleaned = node.modified if node.index.status is CleanupStatus.CLEAN else None
    return body.model_copy(update={"status": node.index.status, "cleaned_at": cleaned})


def _is_index(data: bytes) -> bool:
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False  # from_json of the legacy format says what is wrong with it
    return isinstance(raw, dict) and "sha256" in raw and "job_id" not in raw
