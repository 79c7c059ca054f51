"""Job status records in ``jobs/<job-id>/status``: written by the leader through its fence.

A status record is the durable part of a live job's bookkeeping (state, attempts, failures):
it lets a standby answer reads and a new leader continue where the old one stopped. It is a
convenience next to the real safety state (the job graph pointer, the execution lease, the
result): a missing or unreadable record costs history, never a job.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from steward.errors import (
    ConcurrentModificationError,
    CorruptStateError,
    NodeExistsError,
    NoNodeError,
    UnsupportedSchemaError,
)
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.store.checkpoints import ensure_job_node
from steward.store.group_commit import Create
from steward.store.record_feed import NO_FEED, RecordFeed
from steward.wire.record_format import DEFAULT_RECORD_FORMAT, decode_status, encode_status
from steward.wire.records import JobStatusRecord

log = logging.getLogger(__name__)

BATCH = 50
"""Records per transaction of :meth:`JobStatusStore.write_many` (about 1 KB each, far below
ZooKeeper's 1 MB request limit)."""


class JobStatusStore:
    """Read and (fenced) write the status records of live jobs; ``feed`` hears of every
    write that ZooKeeper acknowledged, and of the records read with ``find_*quietly``.
    Records are written at ``record_format`` (``high-availability.record-format``) and read
    at either."""

    def __init__(
        self,
        session: Session,
        feed: RecordFeed = NO_FEED,
        *,
        record_format: int = DEFAULT_RECORD_FORMAT,
    ) -> None:
        self._client = session.client
        self._layout = session.layout
        self.feed = feed
        self._format = record_format

    def _encoded(self, record: JobStatusRecord) -> bytes:
        return encode_status(record, self._format)

    def write(self, fence: Fence, record: JobStatusRecord) -> None:
        """Create or overwrite the job's record; raises FencedError for a deposed leader."""
        self._write(fence, record)
        self.feed.wrote([record])

    def _write(self, fence: Fence, record: JobStatusRecord) -> None:
        path = self._layout.job_status(record.job_id)
        data = self._encoded(record)
        # Overwrite first: nearly every write is of an existing record, and this is one round
        # trip instead of a read and a write (the leader makes these under its lock).
        try:
            fence.transaction().set_data(path, data).commit()
            return
        except NoNodeError:
            pass
        ensure_job_node(self._client, self._layout, fence, record.job_id)
        try:
            fence.transaction().create(path, data).commit()
        except NodeExistsError:
            fence.transaction().set_data(path, data).commit()

    def write_with(self, fence: Fence, record: JobStatusRecord, also: Sequence[Create]) -> bool:
        """Overwrite the job's record and create ``also`` in one transaction (an event's
        notification with the record that makes it true). False if one of ``also`` exists
        already (written before, by this leader or an earlier one): the record is then
        written alone."""
        path = self._layout.job_status(record.job_id)
        transaction = fence.transaction().set_data(path, self._encoded(record))
        for create in also:
            transaction.create(create.path, create.data)
        try:
            transaction.commit()
        except NoNodeError:
            self._write(fence, record)  # no record yet: create it, then the event with it
            return self.write_with(fence, record, also)
        except NodeExistsError:
            self.write(fence, record)
            return False
        self.feed.wrote([record])
        return True

    def first_creates(self, record: JobStatusRecord) -> list[Create]:
        """The creates of a new job's nodes with its first ``record`` (what :meth:`write`
        makes in four round trips), for the transaction that creates its graph's pointer.
        Once it is committed, :meth:`created` tells the feed."""
        job_id = record.job_id
        return [
            Create(self._layout.job(job_id), b""),
            Create(self._layout.job_status(job_id), self._encoded(record)),
        ]

    def created(self, record: JobStatusRecord) -> None:
        """The transaction of :meth:`first_creates` for ``record`` was committed."""
        self.feed.wrote([record])

    def write_many(self, fence: Fence, records: list[JobStatusRecord]) -> None:
        """Write many records, :data:`BATCH` overwrites per fenced transaction (one round trip
        each); a batch that meets a missing record is written record by record instead."""
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            transaction = fence.transaction()
            for record in chunk:
                transaction.set_data(self._layout.job_status(record.job_id), self._encoded(record))
            try:
                transaction.commit()
            except NoNodeError:
                for record in chunk:
                    self.write(fence, record)
                continue
            self.feed.wrote(chunk)

    def write_many_unchanged(
        self, fence: Fence, records: Sequence[tuple[JobStatusRecord, int]]
    ) -> list[str]:
        """Overwrite each record only if its znode is still at the version given (the one a
        read found), :data:`BATCH` per fenced transaction. The ids of the jobs whose record
        changed (or went) since are returned, not written: whoever changed it wrote a newer
        truth. FencedError, and the error of a store that did not answer, propagate (a
        batch already committed stays written; written again, it counts as changed)."""
        skipped: list[str] = []
        for start in range(0, len(records), BATCH):
            skipped.extend(self._write_unchanged(fence, list(records[start : start + BATCH])))
        return skipped

    def _write_unchanged(self, fence: Fence, batch: list[tuple[JobStatusRecord, int]]) -> list[str]:
        skipped: list[str] = []
        while batch:
            transaction = fence.transaction()
            for record, version in batch:
                path = self._layout.job_status(record.job_id)
                transaction.set_data(path, self._encoded(record), version)
            _results, failure = transaction.commit_or_failure()
            if failure is None:
                self.feed.wrote([record for record, _version in batch])
                return skipped
            if not isinstance(failure.error, ConcurrentModificationError | NoNodeError):
                raise failure.error
            # One changed record fails its whole batch: the batch without it, again.
            skipped.append(batch.pop(failure.index)[0].job_id)
        return skipped

    def remove(self, fence: Fence, job_id: str) -> bool:
        """Delete the job's record (cleanup); False if there was none."""
        path = self._layout.job_status(job_id)
        if zk.read(self._client, path) is None:
            self.feed.removed(job_id)
            return False
        try:
            fence.transaction().delete(path).commit()
        except NoNodeError:
            self.feed.removed(job_id)
            return False
        self.feed.removed(job_id)
        return True

    def find(self, job_id: str) -> JobStatusRecord | None:
        """The job's record, or None if it has none; CorruptStateError if unreadable."""
        found = zk.read(self._client, self._layout.job_status(job_id))
        if found is None:
            return None
        record = decode_status(found[0], job_id)
        if record.job_id != job_id:
            raise CorruptStateError(f"status of {job_id!r} holds job {record.job_id!r}")
        return record

    def find_quietly(self, job_id: str) -> JobStatusRecord | None:
        """Like :meth:`find`, but an unreadable record is logged and read as None. A record
        of a newer schema still raises UnsupportedSchemaError: it is not damaged, only not
        this release's to read, and a leader must not take it for a job without history."""
        found = zk.read(self._client, self._layout.job_status(job_id))
        record = None if found is None else _decoded_quietly(job_id, found[0])
        if record is not None:
            self.feed.read([record])
        return record

    def find_many_quietly(self, job_ids: list[str]) -> dict[str, JobStatusRecord | None]:
        """:meth:`find_quietly` of every job, the reads pipelined in bounded batches."""
        return self.find_many_versioned(job_ids)[0]

    def find_many_versioned(
        self, job_ids: list[str]
    ) -> tuple[dict[str, JobStatusRecord | None], dict[str, int]]:
        """:meth:`find_many_quietly`, and the znode version of each record found (for
        :meth:`write_many_unchanged`)."""
        paths = [self._layout.job_status(job_id) for job_id in job_ids]
        records: dict[str, JobStatusRecord | None] = {}
        versions: dict[str, int] = {}
        for job_id, read in zip(job_ids, zk.read_batched(self._client, paths), strict=True):
            records[job_id] = None if read is None else _decoded_quietly(job_id, read[0])
            if read is not None:
                versions[job_id] = read[1].version
        self.feed.read([record for record in records.values() if record is not None])
        return records, versions

    def job_ids(self) -> list[str]:
        """Ids under ``jobs/`` (live jobs, and terminated ones whose cleanup is not done)."""
        return zk.job_children(self._client, self._layout.jobs)


def _decoded_quietly(job_id: str, data: bytes) -> JobStatusRecord | None:
    """The record in ``data``, or None (logged) if it is not ``job_id``'s readable record;
    UnsupportedSchemaError for a newer Steward's."""
    try:
        record = decode_status(data, job_id)
    except UnsupportedSchemaError:
        raise
    except CorruptStateError as exc:
        log.warning("unreadable job status ignored job=%s error=%s", job_id, exc)
        return None
    if record.job_id != job_id:
        log.warning(
            "unreadable job status ignored job=%s error=holds job %r", job_id, record.job_id
        )
        return None
    return record
