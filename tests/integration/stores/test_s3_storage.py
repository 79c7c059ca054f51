"""The HA storage on ``s3://`` through s3fs, against a real S3-compatible server (moto's, a
process of its own: steward.testing.s3): blobs, job graphs with their pointers in a real
ZooKeeper, contents; and a store that stops answering (SIGSTOP) fails writes with a clear
error instead of hanging, keeps what it had, and works again once it answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stores_support import Contender, make_graph

from steward.errors import BlobStoreError, CorruptStateError
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.store.job_graphs import JobGraphStore
from steward.store.log_archive import LogArchive, last_lines_start
from steward.testing.s3 import S3Server
from support import require_modules, wait_until

require_modules(
    s3fs="s3:// needs s3fs (pip install steward[s3])",
    moto="the S3 server of these tests is moto's (the dev extra)",
)

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    import s3fs  # here, not at the top: see support.require_modules

    with pytest.MonkeyPatch.context() as env, S3Server(tmp_path_factory.mktemp("s3")) as server:
        for key, value in server.environment().items():
            env.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()  # none made for another endpoint
        yield server
        s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def store(s3: S3Server, request: pytest.FixtureRequest) -> BlobStore:
    return BlobStore(s3.url(request.node.name[:40]))


def test_blobs_round_trip_list_delete_and_detect_corruption(store: BlobStore) -> None:
    ref = store.put("jobgraphs/job-1/first", b"payload")

    assert store.get(ref) == b"payload"
    assert store.exists("jobgraphs/job-1/first")
    assert [info.key for info in store.list("jobgraphs")] == ["jobgraphs/job-1/first"]

    store.filesystem.pipe_file(store.path("jobgraphs/job-1/first"), b"STEWARD-BLOB garbage")
    with pytest.raises(CorruptStateError):
        store.get(ref)
    store.delete("jobgraphs/job-1/first")
    store.delete("jobgraphs/job-1/first")  # twice: cleanup is retried
    assert store.list("jobgraphs") == []
    with pytest.raises(BlobStoreError, match="missing"):
        store.get(ref)


def test_job_graphs_and_contents_live_on_s3(
    leader: Contender, session: Session, store: BlobStore, tmp_path: Path
) -> None:
    graphs = JobGraphStore(session, store)
    graphs.put(leader.fence, make_graph("job-s3"))
    orphan = store.put("jobgraphs/job-gone/0-orphan", b"{}").key

    assert [r.job_id for r in graphs.recover_all() if r.graph is not None] == ["job-s3"]
    assert graphs.collect_garbage(min_age=0) == [orphan]
    assert graphs.remove(leader.fence, "job-s3")
    assert store.list("jobgraphs") == []

    contents = ContentStore(store)
    local = tmp_path / "lib.py"
    local.write_bytes(b"VALUE = 7\n" * 1000)
    sha, stored = contents.put_file(local)
    assert stored and contents.stat(sha) is not None
    with contents.open(sha) as handle:
        assert handle.read() == local.read_bytes()
    # An object cannot be touched in place: a marker carries the renewal (a HEAD's).
    first = contents.age(sha)
    assert first is not None
    wait_until(lambda: time.time() >= first.modified + 1.5, 5, message="a second passes")
    contents.touch(sha)
    renewed = contents.age(sha)
    assert renewed is not None and renewed.modified > first.modified
    assert [info.modified for info in contents.stored()] == [renewed.modified]
    contents.delete(sha)
    assert contents.stored() == [] and store.list("contents") == []


@pytest.mark.timeout(180)
def test_a_store_that_stops_answering_fails_writes_and_keeps_what_it_had(
    s3: S3Server, store: BlobStore
) -> None:
    before = store.put("jobgraphs/job-2/before", b"kept")
    s3.freeze()
    try:
        # A clear error (the driver's timeouts, then its retries), never a hang
        with pytest.raises(
            BlobStoreError, match=r"cannot write blob jobgraphs/job-2/during.*no answer"
        ):
            store.put("jobgraphs/job-2/during", b"lost")
    finally:
        s3.thaw()

    assert store.get(before) == b"kept"
    after = store.put("jobgraphs/job-2/after", b"again")
    assert store.get(after) == b"again"


def test_archived_logs_round_trip_on_an_object_store(store: BlobStore, tmp_path: Path) -> None:
    archive = LogArchive(store)
    source = tmp_path / "runner.log"
    data = b"".join(b"line %d\n" % n for n in range(50_000))
    source.write_bytes(data)

    assert archive.put("job-1", 2, source) == len(data)

    assert archive.exists("job-1", 2)
    opened = archive.open("job-1", 2)
    assert opened is not None
    with opened:
        start = last_lines_start(opened, 2)
        opened.seek(start)
        assert opened.read() == b"line 49998\nline 49999\n"
    assert [(e.key, e.size) for e in archive.listing()] == [("logs/job-1/2.log", len(data))]
    archive.delete("logs/job-1/2.log")
    assert archive.open("job-1", 2) is None
    assert list(archive.listing()) == []
