"""Result bodies in blob storage, a small fenced index in ZooKeeper (rule 7), on a real
ZooKeeper and a real file:// blob store: the layout, bodies that go missing or rot, entries an
older version kept whole in ZooKeeper and their migration, and removal by retention."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from stores_support import Contender

from steward.errors import FencedError, JobNotFoundError, ResultBodyError
from steward.ha.layout import Layout
from steward.ha.session import Session
from steward.store.blob import BlobStore, sha256_hex
from steward.store.result_index import body_key
from steward.store.results import JobResultStore
from steward.wire.records import ErrorInfo, JobResultEntry, JobResultIndex
from steward.wire.states import CleanupStatus, TerminalState

pytestmark = pytest.mark.zookeeper

Depose = Callable[[], Contender]

INDEX_BUDGET = 200
"""ZooKeeper bytes a finished job may cost (issue 22): its node's path and data, as ZooKeeper's
own approximate data size counts them."""


@pytest.fixture
def store(session: Session, blobs: BlobStore) -> JobResultStore:
    return JobResultStore(session, blobs)


def _entry(job_id: str, epoch: int, **changes: object) -> JobResultEntry:
    entry = JobResultEntry(
        job_id=job_id,
        state=TerminalState.FAILED,
        value={"rows": 12, "path": "s3://bucket/out"},
        error=ErrorInfo(type="ValueError", message="bad row 7", traceback="x" * 50_000),
        finished_at=1_700_000_060.5,
        epoch=epoch,
        name="etl",
    )
    return entry.model_copy(update=changes)


def _write_legacy(session: Session, entry: JobResultEntry) -> None:
    """As a version before results moved to blob storage wrote it: the whole entry."""
    session.client.create(session.layout.result(entry.job_id), entry.to_json(), makepath=True)


def _node(session: Session, job_id: str) -> tuple[bytes, int]:
    data, stat = session.client.get(session.layout.result(job_id))
    return bytes(data), int(stat.version)


def test_a_result_body_goes_to_blob_storage_and_zookeeper_keeps_an_index_under_200_bytes(
    store: JobResultStore, session: Session, leader: Contender, blob_root: Path
) -> None:
    entry = _entry("job-0123456789ab", leader.fence.epoch)

    store.create_dirty(leader.fence, entry)

    data, _version = _node(session, "job-0123456789ab")
    index = JobResultIndex.from_json(data)
    assert (index.state, index.status) == (TerminalState.FAILED, CleanupStatus.DIRTY)
    assert index.sha256 == sha256_hex(entry.to_json())
    path = Layout("/steward/default").result("job-0123456789ab")  # the defaults' path
    assert len(path) + len(data) < INDEX_BUDGET, (len(path), data)
    body = blob_root / body_key("job-0123456789ab", index.sha256)
    assert body.is_file() and body.stat().st_size > 50_000
    assert store.get("job-0123456789ab") == entry


def test_a_clean_mark_changes_the_index_alone_and_its_time_is_the_nodes(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    body_before = JobResultIndex.from_json(_node(session, "job-1")[0]).sha256

    clean = store.mark_clean(leader.fence, "job-1")

    index = JobResultIndex.from_json(_node(session, "job-1")[0])
    assert (index.status, index.sha256) == (CleanupStatus.CLEAN, body_before)
    _data, stat = session.client.get(session.layout.result("job-1"))
    assert clean.cleaned_at == stat.mtime / 1000.0
    assert clean.status is CleanupStatus.CLEAN


def test_a_missing_body_is_a_clear_error_for_that_job_alone(
    store: JobResultStore, leader: Contender, blob_root: Path
) -> None:
    store.create_dirty(leader.fence, _entry("job-lost", leader.fence.epoch))
    store.create_dirty(leader.fence, _entry("job-kept", leader.fence.epoch))
    for body in (blob_root / "results" / "job-lost").iterdir():
        body.unlink()

    with pytest.raises(ResultBodyError, match=r"job-lost.*cannot be read.*missing"):
        store.find("job-lost")
    assert store.has_result("job-lost")  # still never re-run
    assert [entry.job_id for entry in store.entries()] == ["job-kept"]
    assert [node.job_id for node in store.nodes()] == ["job-kept", "job-lost"]


def test_a_damaged_body_fails_its_checksum_and_is_a_clear_error(
    store: JobResultStore, leader: Contender, blob_root: Path
) -> None:
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    (body,) = (blob_root / "results" / "job-1").iterdir()
    body.write_bytes(body.read_bytes().replace(b"bad row 7", b"bad row 8"))

    with pytest.raises(ResultBodyError, match=r"job-1.*checksum"):
        store.find("job-1")


def test_a_legacy_entry_is_read_as_it_is_and_migrated_once(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    legacy = _entry("job-old", leader.fence.epoch, status=CleanupStatus.CLEAN, cleaned_at=5.0)
    _write_legacy(session, legacy)
    assert store.get("job-old") == legacy
    assert [n.legacy for n in store.nodes()] == [legacy]

    assert store.migrate(leader.fence, "job-old")

    index = JobResultIndex.from_json(_node(session, "job-old")[0])
    assert (index.state, index.status) == (TerminalState.FAILED, CleanupStatus.CLEAN)
    migrated = store.get("job-old")
    assert migrated.model_copy(update={"cleaned_at": 5.0}) == legacy
    version = _node(session, "job-old")[1]
    assert not store.migrate(leader.fence, "job-old")  # nothing left to do
    assert _node(session, "job-old")[1] == version


def test_a_migration_that_crashed_after_writing_the_body_is_finished_by_the_next(
    store: JobResultStore, session: Session, leader: Contender, blobs: BlobStore
) -> None:
    legacy = _entry("job-old", leader.fence.epoch)
    _write_legacy(session, legacy)
    body = legacy.to_json()
    blobs.put(body_key("job-old", sha256_hex(body)), body)  # the crashed leader's first step

    assert store.migrate(leader.fence, "job-old")

    assert store.get("job-old") == legacy
    assert blobs.list("results/job-old") and len(blobs.list("results/job-old")) == 1


def test_marking_a_legacy_entry_clean_migrates_it(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    _write_legacy(session, _entry("job-old", leader.fence.epoch))

    assert store.mark_clean(leader.fence, "job-old").status is CleanupStatus.CLEAN

    index = JobResultIndex.from_json(_node(session, "job-old")[0])
    assert index.status is CleanupStatus.CLEAN


def test_removing_a_result_takes_its_index_and_bodies_and_frees_the_id(
    store: JobResultStore, leader: Contender, blobs: BlobStore
) -> None:
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    store.mark_clean(leader.fence, "job-1")
    (node,) = store.nodes()

    assert store.remove(leader.fence, node)

    assert store.find("job-1") is None
    assert not store.has_result("job-1")
    assert blobs.list("results/job-1") == []
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch, finished_at=time.time()))
    assert store.get("job-1").status is CleanupStatus.DIRTY


def test_a_result_changed_since_it_was_read_is_not_removed(
    store: JobResultStore, leader: Contender
) -> None:
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    (node,) = store.nodes()
    store.mark_clean(leader.fence, "job-1")

    assert not store.remove(leader.fence, node)

    assert store.get("job-1").status is CleanupStatus.CLEAN


def test_a_deposed_leader_can_neither_migrate_nor_remove(
    session: Session, leader: Contender, depose: Depose, blobs: BlobStore
) -> None:
    old = JobResultStore(leader.session, blobs)
    _write_legacy(session, _entry("job-old", leader.fence.epoch))
    old.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    nodes = old.nodes()
    new_leader = depose()
    before = [_node(new_leader.session, job_id) for job_id in ("job-old", "job-1")]

    with pytest.raises(FencedError):
        old.migrate(leader.fence, "job-old")
    for node in nodes:
        with pytest.raises(FencedError):
            old.remove(leader.fence, node)
    with pytest.raises(FencedError):
        old.create_dirty(leader.fence, _entry("job-2", leader.fence.epoch))

    after = [_node(new_leader.session, job_id) for job_id in ("job-old", "job-1")]
    assert after == before
    assert blobs.list("results/job-2") == []  # a refused create leaves no body behind
    with pytest.raises(JobNotFoundError):
        JobResultStore(new_leader.session, blobs).get("job-2")


def test_a_dirty_result_is_marked_until_it_is_clean_so_recovery_reads_no_other_result(
    store: JobResultStore, session: Session, leader: Contender
) -> None:
    store.create_dirty(leader.fence, _entry("job-1", leader.fence.epoch))
    store.create_dirty(leader.fence, _entry("job-2", leader.fence.epoch))
    _write_legacy(session, _entry("job-old", leader.fence.epoch))  # DIRTY, unmarked
    assert store.dirty_ids() == ["job-1", "job-2"]
    assert store.with_result(["job-1", "job-old", "job-none"]) == {"job-1", "job-old"}

    store.mark_clean(leader.fence, "job-1")
    store.migrate(leader.fence, "job-old")

    assert store.dirty_ids() == ["job-2", "job-old"]
    assert [entry.job_id for entry in store.list_dirty()] == ["job-2", "job-old"]
