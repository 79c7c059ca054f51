"""The HA stores one term writes through its fence, built once and passed to every part.

Also where a job's own storage directory is named (:func:`checkpoint_dir`): the scheduler hands
it to attempts, the initialize hook gets it, cleanup removes it (rule 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from steward.artifacts import checkpoint_dirs
from steward.config import Configuration
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.checkpoints import CheckpointIDCounter, CompletedCheckpointStore
from steward.store.job_graphs import JobGraphStore
from steward.store.leases import ExecutionLeases
from steward.store.outbox import NotificationOutbox
from steward.store.record_feed import NO_FEED, RecordFeed
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore


def checkpoint_dir(config: Configuration, job_id: str) -> str:
    """The job's own directory for Spark checkpoints and stages (stable across attempts)."""
    return checkpoint_dirs.join(config.settings.storage.storage_dir, "pipelines", job_id)


@dataclass
class LeaderStores:
    session: Session
    blobs: BlobStore
    graphs: JobGraphStore
    results: JobResultStore
    statuses: JobStatusStore
    leases: ExecutionLeases
    checkpoints_retained: int
    outbox: NotificationOutbox

    @classmethod
    def open(
        cls,
        session: Session,
        blobs: BlobStore,
        config: Configuration,
        jobmanager_id: str,
        feed: RecordFeed = NO_FEED,
    ) -> LeaderStores:
        """The term's stores; ``feed`` hears of every status record and result they write
        (the JobManager's own event stream and job index)."""
        record_format = config.settings.zookeeper.record_format
        return cls(
            session=session,
            blobs=blobs,
            graphs=JobGraphStore(session, blobs, record_format=record_format),
            results=JobResultStore(session, blobs, feed),
            statuses=JobStatusStore(session, feed, record_format=record_format),
            leases=ExecutionLeases(session, tm_id=jobmanager_id),
            checkpoints_retained=config.settings.storage.checkpoints_retained,
            outbox=NotificationOutbox(session),
        )

    def checkpoints(self, job_id: str) -> CompletedCheckpointStore:
        return CompletedCheckpointStore(self.session, self.blobs, job_id, self.checkpoints_retained)

    def checkpoint_counter(self, job_id: str) -> CheckpointIDCounter:
        return CheckpointIDCounter(self.session, job_id)
