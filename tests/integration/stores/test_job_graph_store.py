"""JobGraphStore against a real ZooKeeper: graphs in blobs, small pointers in ZooKeeper.

The invariant under test (seed 002): ``jobgraphs/<job-id>`` exists if and only if a new leader
must recover the job, and a pointer never names a blob that is not there because of us.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from stores_support import Contender, blob_keys, make_graph

from steward.errors import (
    BlobStoreError,
    CorruptStateError,
    JobExistsError,
    JobNotFoundError,
    UnsupportedSchemaError,
)
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import BLOB_PREFIX, JobGraphStore
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import encode_pointer

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def store(session: Session, blobs: BlobStore) -> JobGraphStore:
    return JobGraphStore(session, blobs)


def _raw_pointer(session: Session, job_id: str) -> bytes:
    data, _stat = session.client.get(session.layout.jobgraph(job_id))
    return bytes(data)


def _write_raw_pointer(session: Session, job_id: str, data: bytes) -> None:
    # Damage injected from outside Steward (an operator, a bug in another version): unfenced.
    session.client.create(session.layout.jobgraph(job_id), data)


# ---------------------------------------------------------------- put and get


def test_given_a_put_graph_when_read_back_then_it_equals_what_was_put(
    store: JobGraphStore, leader: Contender
) -> None:
    graph = make_graph("job-1")

    store.put(leader.fence, graph)

    assert store.get("job-1") == graph
    assert store.contains("job-1")
    assert store.job_ids() == ["job-1"]


def test_given_a_put_graph_then_its_zookeeper_pointer_is_small_json_naming_the_blob(
    session: Session, blobs: BlobStore, leader: Contender
) -> None:
    # A large artifact: the pointer must stay small regardless (ZooKeeper holds no data).
    store = JobGraphStore(session, blobs, record_format=1)
    graph = make_graph("job-1", code="x = 1\n" * 50_000)

    returned = store.put(leader.fence, graph)

    raw = _raw_pointer(session, "job-1")
    assert len(raw) < 512
    pointer = json.loads(raw)
    assert set(pointer) == {"schema", "blob", "sha256", "epoch", "submission_sha256"}
    assert pointer["schema"] == 1
    assert pointer["epoch"] == leader.leadership.epoch
    assert pointer["blob"].startswith(f"{BLOB_PREFIX}/job-1/")
    assert pointer["sha256"] == hashlib.sha256(graph.to_json()).hexdigest()
    assert blobs.get(pointer["blob"]) == graph.to_json()
    assert JobGraphPointer.from_json(raw) == returned == store.pointer("job-1")


def test_at_record_format_2_the_pointer_is_shorter_and_reads_back_the_same(
    session: Session, blobs: BlobStore, leader: Contender
) -> None:
    graph = make_graph("job-1")
    old_form = JobGraphStore(session, blobs, record_format=1)
    store = JobGraphStore(session, blobs, record_format=2)

    returned = store.put(leader.fence, graph)

    raw = _raw_pointer(session, "job-1")
    pointer = json.loads(raw)
    assert set(pointer) == {"schema", "b", "h", "e"}  # no submission digest in this graph
    assert pointer["schema"] == 2
    assert "/" not in pointer["b"]  # the job's own blob: its path names the job
    assert len(pointer["h"]) == 43  # base64url, not 64 hex digits
    assert len(raw) < len(encode_pointer(returned, 1, "job-1")) - 50
    # Every store of this release reads it, whichever format it writes.
    assert store.pointer("job-1") == old_form.pointer("job-1") == returned
    assert returned.sha256 == hashlib.sha256(graph.to_json()).hexdigest()
    assert blobs.get(returned.blob) == graph.to_json()
    # A release that reads only schema 1 refuses it, saying why.
    with pytest.raises(UnsupportedSchemaError, match="schema 2 was written by a newer Steward"):
        JobGraphPointer.from_json(raw)


def test_given_a_job_with_a_graph_when_put_again_then_job_exists_and_the_first_graph_stays(
    store: JobGraphStore, session: Session, blobs: BlobStore, leader: Contender
) -> None:
    first = make_graph("job-1", code="def main(ctx):\n    return 'first'\n")
    store.put(leader.fence, first)
    pointer_before = _raw_pointer(session, "job-1")
    blobs_before = blob_keys(blobs, BLOB_PREFIX)

    with pytest.raises(JobExistsError, match="job-1"):
        store.put(leader.fence, make_graph("job-1", code="def main(ctx):\n    return 2\n"))

    assert store.get("job-1") == first
    assert _raw_pointer(session, "job-1") == pointer_before
    assert blob_keys(blobs, BLOB_PREFIX) == blobs_before
    assert len(blobs_before) == 1


def test_given_a_job_when_replaced_then_the_new_graph_is_read_and_the_old_blob_is_deleted(
    store: JobGraphStore, blobs: BlobStore, leader: Contender
) -> None:
    old = store.put(leader.fence, make_graph("job-1", code="def main(ctx):\n    return 1\n"))
    new_graph = make_graph("job-1", code="def main(ctx):\n    return 2\n")

    new = store.replace(leader.fence, new_graph)

    assert store.get("job-1") == new_graph
    assert new.blob != old.blob
    assert not blobs.exists(old.blob)
    assert blob_keys(blobs, BLOB_PREFIX) == [new.blob]


def test_given_no_job_when_replaced_then_job_not_found_and_no_blob_is_written(
    store: JobGraphStore, blobs: BlobStore, leader: Contender
) -> None:
    with pytest.raises(JobNotFoundError, match="job-1"):
        store.replace(leader.fence, make_graph("job-1"))

    assert blob_keys(blobs, BLOB_PREFIX) == []
    assert not store.contains("job-1")


def test_given_an_unknown_job_when_read_then_job_not_found_is_raised(
    store: JobGraphStore,
) -> None:
    with pytest.raises(JobNotFoundError, match="nope"):
        store.get("nope")
    with pytest.raises(JobNotFoundError, match="nope"):
        store.pointer("nope")
    assert not store.contains("nope")


# ---------------------------------------------------------------- remove


def test_given_a_job_when_removed_then_the_pointer_goes_before_the_blob_and_both_are_gone(
    store: JobGraphStore, blobs: BlobStore, leader: Contender, monkeypatch: pytest.MonkeyPatch
) -> None:
    pointer = store.put(leader.fence, make_graph("job-1"))
    pointer_present_at_blob_delete: list[bool] = []
    real_delete = blobs.delete

    def delete_and_record(key: str) -> None:
        pointer_present_at_blob_delete.append(store.contains("job-1"))
        real_delete(key)

    monkeypatch.setattr(blobs, "delete", delete_and_record)

    assert store.remove(leader.fence, "job-1") is True

    assert pointer_present_at_blob_delete == [False]
    assert not store.contains("job-1")
    assert not blobs.exists(pointer.blob)
    assert blob_keys(blobs, BLOB_PREFIX) == []


def test_given_an_unknown_job_when_removed_then_false_is_returned(
    store: JobGraphStore, leader: Contender
) -> None:
    store.put(leader.fence, make_graph("job-1"))

    assert store.remove(leader.fence, "nope") is False
    assert store.contains("job-1")


def test_given_the_recovery_invariant_then_a_pointer_exists_exactly_while_the_job_is_stored(
    store: JobGraphStore, leader: Contender
) -> None:
    assert store.job_ids() == []

    store.put(leader.fence, make_graph("job-1"))
    store.put(leader.fence, make_graph("job-2"))
    assert store.job_ids() == ["job-1", "job-2"]

    store.remove(leader.fence, "job-1")
    assert store.job_ids() == ["job-2"]
    assert not store.contains("job-1")
    assert [entry.job_id for entry in store.recover_all()] == ["job-2"]

    store.remove(leader.fence, "job-2")
    assert store.job_ids() == []
    assert store.recover_all() == []


# ---------------------------------------------------------------- damage


def test_given_a_graph_blob_overwritten_on_disk_when_read_then_corrupt_state_is_raised(
    store: JobGraphStore, blob_root: Path, leader: Contender
) -> None:
    pointer = store.put(leader.fence, make_graph("job-1"))
    (blob_root / pointer.blob).write_bytes(b"not what was written")

    with pytest.raises(CorruptStateError, match=pointer.blob):
        store.get("job-1")


def test_given_a_graph_blob_replaced_by_a_valid_blob_of_another_graph_then_corrupt_state(
    store: JobGraphStore, blobs: BlobStore, blob_root: Path, leader: Contender
) -> None:
    pointer = store.put(leader.fence, make_graph("job-1"))
    other = blobs.put("elsewhere/blob", make_graph("job-1", code="evil = 1\n").to_json())
    (blob_root / pointer.blob).write_bytes((blob_root / other.key).read_bytes())

    with pytest.raises(CorruptStateError, match="sha256 differs"):
        store.get("job-1")


def test_given_a_graph_blob_deleted_on_disk_when_read_then_blob_store_error_is_raised(
    store: JobGraphStore, blob_root: Path, leader: Contender
) -> None:
    pointer = store.put(leader.fence, make_graph("job-1"))
    (blob_root / pointer.blob).unlink()

    with pytest.raises(BlobStoreError, match="missing") as caught:
        store.get("job-1")

    assert not isinstance(caught.value, CorruptStateError)
    assert store.contains("job-1")  # the pointer is kept: the job is reported, not dropped


def test_given_a_pointer_to_a_blob_that_never_existed_when_read_then_it_is_reported(
    store: JobGraphStore, session: Session, leader: Contender
) -> None:
    dangling = JobGraphPointer(
        blob=f"{BLOB_PREFIX}/job-1/never-written",
        sha256=hashlib.sha256(b"nothing").hexdigest(),
        epoch=leader.leadership.epoch,
    )
    leader.fence.transaction().create(session.layout.jobgraph("job-1"), dangling.to_json()).commit()

    with pytest.raises(BlobStoreError, match="never-written"):
        store.get("job-1")
    [recovered] = store.recover_all()
    assert recovered.job_id == "job-1"
    assert recovered.graph is None
    assert isinstance(recovered.error, BlobStoreError)
    assert "never-written" in str(recovered.error)


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\xffgarbage", b"", b"[]", b'{"schema": 1}', b'{"schema": 1, "blob": "x"}'],
    ids=["binary", "empty", "not-an-object", "no-fields", "missing-fields"],
)
def test_given_garbage_in_the_pointer_znode_when_read_then_corrupt_state_is_raised(
    store: JobGraphStore, session: Session, garbage: bytes
) -> None:
    _write_raw_pointer(session, "job-1", garbage)

    with pytest.raises(CorruptStateError, match="job graph pointer"):
        store.get("job-1")
    with pytest.raises(CorruptStateError):
        store.pointer("job-1")


def test_given_good_and_damaged_jobs_when_recovering_all_then_each_is_reported_on_its_own(
    store: JobGraphStore, session: Session, blob_root: Path, leader: Contender
) -> None:
    good = {f"good-{n}": make_graph(f"good-{n}") for n in range(5)}
    for graph in good.values():
        store.put(leader.fence, graph)
    corrupt = store.put(leader.fence, make_graph("corrupt-blob"))
    (blob_root / corrupt.blob).write_bytes(b"\x00" * 40)
    missing = store.put(leader.fence, make_graph("missing-blob"))
    (blob_root / missing.blob).unlink()
    _write_raw_pointer(session, "corrupt-pointer", b"{not json")

    recovered = {entry.job_id: entry for entry in store.recover_all(parallelism=4)}

    assert sorted(recovered) == sorted([*good, "corrupt-blob", "missing-blob", "corrupt-pointer"])
    for job_id, graph in good.items():
        assert recovered[job_id].graph == graph
        assert recovered[job_id].error is None
    for job_id in ("corrupt-blob", "missing-blob", "corrupt-pointer"):
        assert recovered[job_id].graph is None
    assert isinstance(recovered["corrupt-blob"].error, CorruptStateError)
    assert corrupt.blob in str(recovered["corrupt-blob"].error)
    missing_error = recovered["missing-blob"].error
    assert isinstance(missing_error, BlobStoreError)
    assert "missing" in str(missing_error)
    assert isinstance(recovered["corrupt-pointer"].error, CorruptStateError)
    assert "pointer" in str(recovered["corrupt-pointer"].error)
    # Recovery only reads: every pointer is still there for an operator to look at.
    assert len(store.job_ids()) == 8


# ---------------------------------------------------------------- garbage collection


def _age(blob_root: Path, key: str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(blob_root / key, (then, then))


def test_given_orphan_and_referenced_blobs_when_collecting_garbage_then_only_old_orphans_go(
    store: JobGraphStore, blobs: BlobStore, blob_root: Path, leader: Contender
) -> None:
    graph = make_graph("job-1")
    referenced = store.put(leader.fence, graph).blob
    old_orphan = blobs.put(blobs.unique_key(f"{BLOB_PREFIX}/job-2"), b"crashed writer").key
    young_orphan = blobs.put(blobs.unique_key(f"{BLOB_PREFIX}/job-3"), b"writer at work").key
    _age(blob_root, referenced, 7200)
    _age(blob_root, old_orphan, 7200)

    deleted = store.collect_garbage(min_age=3600)

    assert deleted == [old_orphan]
    assert sorted(blob_keys(blobs, BLOB_PREFIX)) == sorted([referenced, young_orphan])
    assert store.get("job-1") == graph


def test_given_a_job_whose_pointer_is_unreadable_when_collecting_garbage_then_its_blobs_stay(
    store: JobGraphStore, session: Session, blobs: BlobStore, blob_root: Path, leader: Contender
) -> None:
    # An unreadable pointer may still be repaired by an operator; its blob is the only copy
    # of the job's graph, so garbage collection must not treat it as an orphan.
    pointer = store.put(leader.fence, make_graph("job-1"))
    session.client.set(session.layout.jobgraph("job-1"), b"{damaged")
    _age(blob_root, pointer.blob, 7200)

    assert store.collect_garbage(min_age=3600) == []

    assert blobs.exists(pointer.blob)
