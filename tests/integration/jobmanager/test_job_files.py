"""The files a job names, against real JobManagers on a real ZooKeeper: upload, HEAD, the
submission's check, the client's skip of what is stored, and the leader's garbage collection."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import httpx
import pytest
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.client import Client
from steward.errors import JobRejectedError
from steward.store.contents import ContentStore
from support import wait_until

pytestmark = pytest.mark.zookeeper


@cache
def environment_archive() -> bytes:
    """A real .tar.gz of 3 MB (random, so it stays 3 MB): submissions check archives.

    Built on first use, once: at import it cost every xdist worker its gzip at collection.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        member = tarfile.TarInfo("bin/data")
        payload = os.urandom(3 * 1024 * 1024 + 17)
        member.size = len(payload)
        archive.addfile(member, io.BytesIO(payload))
    return buffer.getvalue()


@cache
def archive_sha() -> str:
    return hashlib.sha256(environment_archive()).hexdigest()


class RecordingTransport(httpx.HTTPTransport):
    """The client's real transport, noting each request's method and path."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return super().handle_request(request)


def content_path(sha: str | None = None) -> str:
    return f"/v1/contents/{sha or archive_sha()}"


def stored_files(cluster: JobManagerCluster) -> list[str]:
    folder = cluster.storage / "contents" / "sha256"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def leftover_uploads(cluster: JobManagerCluster) -> list[Path]:
    folder = cluster.storage / "contents" / "uploads"
    return list(folder.iterdir()) if folder.exists() else []


def test_any_jobmanager_stores_a_file_once_and_says_so(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    assert cluster.http.head(cluster.url(leader, content_path())).status_code == 404

    first = cluster.http.put(cluster.url(standby, content_path()), content=environment_archive())
    assert first.status_code == 201, first.text
    again = cluster.http.put(cluster.url(leader, content_path()), content=environment_archive())
    assert again.status_code == 200, again.text
    for manager in (leader, standby):
        head = cluster.http.head(cluster.url(manager, content_path()))
        assert head.status_code == 200
        assert head.headers["x-steward-size"] == str(len(environment_archive()))
    assert stored_files(cluster) == [archive_sha()]
    assert (
        cluster.storage / "contents" / "sha256" / archive_sha()
    ).read_bytes() == environment_archive()


def test_bytes_that_do_not_match_their_hash_are_refused_and_nothing_stored(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    wrong = hashlib.sha256(b"other").hexdigest()
    answer = cluster.http.put(
        cluster.url(leader, content_path(wrong)), content=environment_archive()
    )
    assert answer.status_code == 400
    assert answer.json()["code"] == "content_mismatch"
    assert stored_files(cluster) == [] and leftover_uploads(cluster) == []
    bad_name = cluster.http.put(cluster.url(leader, "/v1/contents/..%2Fx"), content=b"x")
    assert bad_name.status_code in (400, 404)


def test_an_upload_over_the_limit_is_cut_off_and_nothing_stored(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"jobmanager.upload.max-size": "1m"})
    declared = cluster.http.put(cluster.url(leader, content_path()), content=environment_archive())
    assert declared.status_code == 413
    assert declared.json()["code"] == "too_large"
    sent = 0

    def endless() -> Iterator[bytes]:  # chunked: no Content-Length to refuse up front
        nonlocal sent
        while sent < 64 * 1024 * 1024:
            sent += 256 * 1024
            yield b"y" * (256 * 1024)

    try:
        answer = cluster.http.put(cluster.url(leader, content_path()), content=endless())
    except httpx.TransportError:
        pass  # closed while the client was still sending
    else:
        assert answer.status_code == 413
    assert sent < 16 * 1024 * 1024
    assert stored_files(cluster) == []
    wait_until(lambda: leftover_uploads(cluster) == [], 10, message="no upload left behind")


def test_a_submission_naming_a_file_not_stored_is_refused_and_nothing_stored(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    leader = cluster.start_leader("jm-1")
    spec_dependency = {
        "kind": "file",
        "filename": "data.csv",
        "sha256": archive_sha(),
        "size": len(environment_archive()),
    }
    answer = cluster.submit(leader, "job-missing", dependencies=[spec_dependency])
    assert answer.status_code == 400
    assert answer.json()["code"] == "missing_contents"
    assert "data.csv" in answer.json()["message"]
    assert not cluster.exists(cluster.layout.jobgraph("job-missing"))


def test_the_client_uploads_each_file_once_and_the_job_names_them(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    leader = cluster.start_leader("jm-1")
    pipeline = tmp_path / "stw_files_pipeline.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(environment_archive())
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    sent = RecordingTransport()
    with Client([cluster.url(leader, "")], timeout=30, transport=sent) as client:
        started = time.monotonic()
        client.submit(pipeline, job_id="job-1", archives=[f"{archive}#environment"])
        first = time.monotonic() - started
        assert stored_files(cluster) == [archive_sha()]
        sent.requests.clear()
        started = time.monotonic()
        view = client.submit(
            pipeline, job_id="job-2", archives=[f"{archive}#environment"], py_files=[helper]
        )
        second = time.monotonic() - started
    # Neither re-sent nor asked about again: this client knows the cluster holds it.
    assert ("PUT", content_path()) not in sent.requests
    assert ("HEAD", content_path()) not in sent.requests
    helper_sha = hashlib.sha256(b"X = 1\n").hexdigest()
    assert ("HEAD", content_path(helper_sha)) in sent.requests  # a file new to this client
    assert view.job_id == "job-2"
    graph = dispatcher_of(leader).stores.graphs.get("job-2")
    assert [(d.kind.value, d.filename, d.alias) for d in graph.spec.dependencies] == [
        ("py-file", "helper.py", None),
        ("archive", "env.tar.gz", "environment"),
    ]
    print(f"submission with a 3 MB archive: first {first:.3f}s, second {second:.3f}s")


def test_a_file_collected_since_the_client_uploaded_it_is_uploaded_again_once(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    """The client remembers what the cluster holds; the collector may remove it meanwhile.
    The leader then answers missing_contents (nothing stored) and the client uploads again."""
    leader = cluster.start_leader("jm-1")
    pipeline = tmp_path / "stw_files_pipeline.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    data_file = tmp_path / "lookup.csv"
    data_file.write_bytes(b"a,b\n1,2\n")
    sha = hashlib.sha256(data_file.read_bytes()).hexdigest()
    sent = RecordingTransport()
    with Client([cluster.url(leader, "")], timeout=30, transport=sent) as client:
        client.submit(pipeline, job_id="job-kept-1", files=[data_file])
        client.submit(pipeline, job_id="job-kept-2", files=[data_file])
        assert sent.requests.count(("PUT", content_path(sha))) == 1
        assert sent.requests.count(("HEAD", content_path(sha))) == 1
        # The content collector's removal, as it does it: the stored file is gone.
        (cluster.storage / "contents" / "sha256" / sha).unlink()
        sent.requests.clear()
        view = client.submit(pipeline, job_id="job-kept-3", files=[data_file])
        many = client.submit_many(pipeline, [{"job_id": "job-kept-4"}], files=[data_file])
    assert view.job_id == "job-kept-3"
    assert [getattr(o, "job_id", o) for o in many] == ["job-kept-4"]
    assert sent.requests == [
        ("POST", "/v1/jobs"),  # refused: missing_contents, nothing stored
        ("HEAD", content_path(sha)),
        ("PUT", content_path(sha)),
        ("POST", "/v1/jobs"),
        ("POST", "/v1/jobs/batch"),  # the file is known again: no HEAD, no PUT
    ]
    assert stored_files(cluster) == [sha]
    graph = dispatcher_of(leader).stores.graphs.get("job-kept-3")
    assert [d.sha256 for d in graph.spec.dependencies] == [sha]


def test_batch_items_refused_for_a_collected_file_are_sent_again_after_its_upload(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    leader = cluster.start_leader("jm-1")
    pipeline = tmp_path / "stw_files_pipeline.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    data_file = tmp_path / "lookup.csv"
    data_file.write_bytes(b"a,b\n3,4\n")
    sha = hashlib.sha256(data_file.read_bytes()).hexdigest()
    sent = RecordingTransport()
    with Client([cluster.url(leader, "")], timeout=30, transport=sent) as client:
        client.submit_many(pipeline, [{"job_id": "job-bm-0"}], files=[data_file])
        (cluster.storage / "contents" / "sha256" / sha).unlink()
        sent.requests.clear()
        jobs = [{"job_id": f"job-bm-{n}"} for n in range(1, 4)]
        outcomes = client.submit_many(pipeline, jobs, files=[data_file])
    assert [getattr(o, "job_id", repr(o)) for o in outcomes] == ["job-bm-1", "job-bm-2", "job-bm-3"]
    assert sent.requests == [
        ("POST", "/v1/jobs/batch"),
        ("HEAD", content_path(sha)),
        ("PUT", content_path(sha)),
        ("POST", "/v1/jobs/batch"),
    ]
    assert stored_files(cluster) == [sha]


def test_a_missing_local_file_is_refused_before_any_request(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    pipeline = tmp_path / "stw_files_pipeline.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    # No JobManager at this address: a request would be a ClusterUnreachableError.
    with Client(["http://127.0.0.1:9"], timeout=2) as client:
        with pytest.raises(JobRejectedError, match="does not exist"):
            client.submit(pipeline, files=[tmp_path / "nope.csv"])
        with pytest.raises(JobRejectedError, match="includes another file"):
            client.submit(pipeline, requirements=["-r other.txt"])


def test_garbage_collection_keeps_referenced_and_young_files(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"jobmanager.contents.retention": "2s"})
    contents = ContentStore(leader.blobs)
    referenced, young, orphan = (os.urandom(1000) for _ in range(3))
    hashes = {
        name: hashlib.sha256(data).hexdigest()
        for name, data in (("referenced", referenced), ("young", young), ("orphan", orphan))
    }
    for data in (referenced, orphan):
        contents.put(hashlib.sha256(data).hexdigest(), [data])
    dependency = {
        "kind": "file",
        "filename": "kept.bin",
        "sha256": hashes["referenced"],
        "size": 1000,
    }
    cluster.submitted(leader, "job-gc", dependencies=[dependency])  # waits: no TaskManager
    old = time.time() - 3600
    for name in ("referenced", "orphan"):
        os.utime(cluster.storage / "contents" / "sha256" / hashes[name], (old, old))
    contents.put(hashes["young"], [young])

    wait_until(
        lambda: hashes["orphan"] not in stored_files(cluster), 30, message="orphan collected"
    )
    assert hashes["referenced"] in stored_files(cluster)
    assert hashes["young"] in stored_files(cluster)
    collector = dispatcher_of(leader).content_gc
    with collector.pinned([hashes["young"]]):
        os.utime(cluster.storage / "contents" / "sha256" / hashes["young"], (old, old))
        assert collector.collect() == []  # pinned by a submission in progress


def test_a_head_or_a_re_upload_renews_a_stored_files_age(cluster: JobManagerCluster) -> None:
    """A client asks HEAD, then submits: the collector must not delete the file in between."""
    leader = cluster.start_leader("jm-1", **{"jobmanager.contents.retention": "1h"})
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    files = {name: os.urandom(1000) for name in ("asked", "uploaded-again", "forgotten")}
    hashes = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    contents = ContentStore(leader.blobs)
    for name, data in files.items():
        contents.put(hashes[name], [data])
        old = time.time() - 7200
        os.utime(cluster.storage / "contents" / "sha256" / hashes[name], (old, old))

    asked = cluster.http.head(cluster.url(standby, content_path(hashes["asked"])))
    assert asked.status_code == 200
    again = cluster.http.put(
        cluster.url(leader, content_path(hashes["uploaded-again"])),
        content=files["uploaded-again"],
    )
    assert again.status_code == 200, again.text

    assert dispatcher_of(leader).content_gc.collect() == [hashes["forgotten"]]
    assert stored_files(cluster) == sorted([hashes["asked"], hashes["uploaded-again"]])
