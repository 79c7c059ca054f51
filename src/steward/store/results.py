"""The JobResultStore (seed 003): the outcome of every globally terminal job, outliving it.

An entry is created DIRTY the moment a job becomes globally terminal (FINISHED, FAILED,
CANCELED), before any of its HA data is cleaned up, and marked CLEAN once cleanup is done. A
job with an entry is never started again: recovery skips it, resubmission answers with it.
Listing the DIRTY entries lets a new leader finish the cleanups its predecessor left.

Entries are small JSON stored directly in ``results/<job-id>`` (one round trip to read, and
readable with ``zkCli.sh get``), written through the leader's fence like every other leader
write. A result value must therefore stay small (at most :data:`MAX_ENTRY_BYTES` encoded);
pipelines with large outputs write them to storage and return where they are.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from steward.errors import (
    CorruptStateError,
    JobExistsError,
    JobNotFoundError,
    NodeExistsError,
    NoNodeError,
    StoreError,
)
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.wire.records import JobResultEntry
from steward.wire.states import CleanupStatus

log = logging.getLogger(__name__)

MAX_ENTRY_BYTES = 512 * 1024
"""Half of ZooKeeper's default 1 MiB znode limit, leaving room for the multi-op around it."""


class ResultTooLargeError(StoreError):
    """A result entry is larger than :data:`MAX_ENTRY_BYTES`."""


class JobResultStore:
    """Results of globally terminal jobs, in ``results/<job-id>``."""

    def __init__(self, session: Session) -> None:
        self._client = session.client
        self._layout = session.layout

    def create_dirty(self, fence: Fence, entry: JobResultEntry) -> None:
        """Record that a job is globally terminal. :class:`JobExistsError` if it already is."""
        if entry.status is not CleanupStatus.DIRTY:
            raise ValueError("a new result entry must be DIRTY")
        data = entry.to_json()
        if len(data) > MAX_ENTRY_BYTES:
            raise ResultTooLargeError(
                f"result of job {entry.job_id!r} is {len(data)} bytes encoded; the limit is"
                f" {MAX_ENTRY_BYTES} (return a path to large outputs instead)"
            )
        try:
            fence.transaction().create(self._layout.result(entry.job_id), data).commit()
        except NodeExistsError as exc:
            raise JobExistsError(entry.job_id, "result") from exc
        log.info("result recorded job=%s state=%s status=DIRTY", entry.job_id, entry.state)

    def mark_clean(self, fence: Fence, job_id: str) -> JobResultEntry:
        """Mark a job's cleanup done. Idempotent: an entry already CLEAN is returned as is."""
        path = self._layout.result(job_id)
        current = zk.read(self._client, path)
        if current is None:
            raise JobNotFoundError(job_id, "result")
        entry = JobResultEntry.from_json(current[0])
        if entry.status is CleanupStatus.CLEAN:
            return entry
        clean = entry.model_copy(update={"status": CleanupStatus.CLEAN, "cleaned_at": time.time()})
        try:
            fence.transaction().set_data(path, clean.to_json(), current[1].version).commit()
        except NoNodeError as exc:
            raise JobNotFoundError(job_id, "result") from exc
        log.info("result marked clean job=%s", job_id)
        return clean

    def find(self, job_id: str) -> JobResultEntry | None:
        """The job's entry, or None if it has none (it is not globally terminal)."""
        current = zk.read(self._client, self._layout.result(job_id))
        return JobResultEntry.from_json(current[0]) if current else None

    def get(self, job_id: str) -> JobResultEntry:
        entry = self.find(job_id)
        if entry is None:
            raise JobNotFoundError(job_id, "result")
        return entry

    def has_result(self, job_id: str) -> bool:
        return zk.read(self._client, self._layout.result(job_id)) is not None

    def job_ids(self) -> list[str]:
        return zk.job_children(self._client, self._layout.results)

    def entries(self, parallelism: int = 8) -> list[JobResultEntry]:
        """Every readable entry; an unreadable one is logged and left out, never fatal."""
        with ThreadPoolExecutor(max_workers=max(1, parallelism), thread_name_prefix="jrs") as pool:
            found = pool.map(self._find_or_none, self.job_ids())
            return [entry for entry in found if entry is not None]

    def list_dirty(self) -> list[JobResultEntry]:
        """Entries whose cleanup is not done: a new leader resumes these."""
        return [entry for entry in self.entries() if entry.status is CleanupStatus.DIRTY]

    def _find_or_none(self, job_id: str) -> JobResultEntry | None:
        try:
            return self.find(job_id)
        except CorruptStateError as exc:
            log.error("unreadable result entry job=%s error=%s", job_id, exc)
            return None
