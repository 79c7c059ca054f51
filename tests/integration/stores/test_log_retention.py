"""The leader's retention of archived attempt logs, against a real ZooKeeper leadership and a
real local storage: old logs go by age, the oldest go first past the size budget, a stale
partial copy goes, and a deposed leader deletes nothing.
"""

from __future__ import annotations

import collections
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from stores_support import Contender

from steward.config.settings import LogArchiveSettings
from steward.errors import FencedError
from steward.jobmanager.log_retention import BUCKET, LogRetention, size_cutoff
from steward.store.blob import BlobStore
from steward.store.log_archive import LogArchive

pytestmark = pytest.mark.zookeeper

HOUR = 3600.0


def archived(
    archive: LogArchive, tmp_path: Path, job_id: str, attempt: int, *, age: float, size: int = 10
) -> str:
    source = tmp_path / f"{job_id}-{attempt}.log"
    source.write_bytes(b"x" * size)
    archive.put(job_id, attempt, source)
    path = archive.blobs.path(archive.key(job_id, attempt))
    when = time.time() - age
    os.utime(path, (when, when))
    return archive.key(job_id, attempt)


@pytest.fixture(autouse=True)
def mounted(blob_root: Path) -> None:
    """The storage's folder exists (an absent one is an unmounted share: no archiving)."""
    blob_root.mkdir(parents=True, exist_ok=True)


def keys(archive: LogArchive) -> list[str]:
    return sorted(entry.key for entry in archive.listing())


def settings(max_age: float = 0.0, max_total_size: int = 0) -> LogArchiveSettings:
    return LogArchiveSettings(max_age=max_age, max_total_size=max_total_size, check_interval=1.0)


def test_logs_older_than_the_max_age_go_and_their_job_folder_with_the_last(
    leader: Contender, blobs: BlobStore, tmp_path: Path
) -> None:
    archive = LogArchive(blobs)
    archived(archive, tmp_path, "old-job", 1, age=3 * HOUR)
    young = archived(archive, tmp_path, "mixed", 2, age=10.0)
    archived(archive, tmp_path, "mixed", 1, age=3 * HOUR)
    retention = LogRetention(archive, settings(max_age=2 * HOUR), fence=leader.fence)

    assert retention.collect() == 2

    assert keys(archive) == [young]
    assert not Path(blobs.path("logs/old-job")).exists()


def test_past_the_size_budget_the_oldest_go_first(
    leader: Contender, blobs: BlobStore, tmp_path: Path
) -> None:
    archive = LogArchive(blobs)
    newest = archived(archive, tmp_path, "job", 3, age=60.0, size=400)
    middle = archived(archive, tmp_path, "job", 2, age=BUCKET + 60.0, size=400)
    archived(archive, tmp_path, "job", 1, age=2 * BUCKET + 60.0, size=400)
    retention = LogRetention(archive, settings(max_total_size=1000), fence=leader.fence)

    assert retention.collect() == 1

    assert keys(archive) == [middle, newest]
    assert retention.collect() == 0, "what fits stays"


def test_a_partial_copy_goes_once_stale(
    leader: Contender, blobs: BlobStore, tmp_path: Path
) -> None:
    archive = LogArchive(blobs)
    folder = Path(blobs.path("logs/job"))
    folder.mkdir(parents=True)
    stale, fresh = folder / f".1.log.{'a' * 32}.part", folder / f".2.log.{'b' * 32}.part"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    os.utime(stale, (time.time() - 2 * HOUR, time.time() - 2 * HOUR))

    assert LogRetention(archive, settings(max_age=30 * 86400.0), fence=leader.fence).collect() == 1

    assert not stale.exists()
    assert fresh.exists()


def test_a_deposed_leader_deletes_nothing(
    leader: Contender,
    depose: Callable[[], Contender],
    blobs: BlobStore,
    tmp_path: Path,
) -> None:
    archive = LogArchive(blobs)
    old = archived(archive, tmp_path, "job", 1, age=3 * HOUR)
    retention = LogRetention(archive, settings(max_age=HOUR), fence=leader.fence)
    depose()

    with pytest.raises(FencedError):
        retention.collect()

    assert keys(archive) == [old]


def test_size_cutoff_keeps_the_newest_minutes_that_fit() -> None:
    sizes = collections.Counter({10: 5, 11: 5, 12: 5})
    assert size_cutoff(sizes, 15) == -math.inf
    assert size_cutoff(sizes, 10) == 11 * BUCKET
    assert size_cutoff(sizes, 4) == 13 * BUCKET
