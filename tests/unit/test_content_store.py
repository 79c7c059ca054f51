"""The content store: blobs named by their SHA-256, streamed in and out, verified both ways.

Runs on ``file://`` and on fsspec's ``memory://`` (an object-store-like backend without
atomic renames), so the contract does not depend on a local disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from steward.errors import BlobStoreError, CorruptStateError
from steward.store.blob import BlobStore
from steward.store.contents import (
    TOUCHED,
    ContentMismatchError,
    ContentStore,
    ContentTooLargeError,
)

DATA = b"spark-submit --archives env.tar.gz#environment\n" * 1000
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture(params=["file", "memory"])
def contents(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ContentStore]:
    if request.param == "file":
        yield ContentStore(BlobStore(f"file://{tmp_path / 'blobs'}"), max_size=1 << 20)
        return
    name = f"steward-test-{secrets.token_hex(4)}"
    blobs = BlobStore(f"memory://{name}")
    yield ContentStore(blobs, max_size=1 << 20)
    with contextlib.suppress(FileNotFoundError):
        blobs.filesystem.rm(f"/{name}", recursive=True)


def chunks(data: bytes, size: int = 4096) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_a_stored_file_reads_back_whole_and_is_stored_once(
    contents: ContentStore, tmp_path: Path
) -> None:
    assert contents.put(SHA, chunks(DATA)) is True
    assert contents.put(SHA, chunks(DATA)) is False
    info = contents.stat(SHA)
    assert info is not None and info.size == len(DATA)
    assert [i.sha256 for i in contents.stored()] == [SHA]
    assert contents.copy_to(SHA, tmp_path / "out") == len(DATA)
    assert (tmp_path / "out").read_bytes() == DATA


def test_bytes_that_do_not_hash_to_the_name_are_refused_and_nothing_is_left(
    contents: ContentStore,
) -> None:
    wrong = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(ContentMismatchError, match="nothing was stored"):
        contents.put(wrong, chunks(DATA))
    assert not contents.exists(wrong)
    assert contents.stored() == []
    assert contents.stale_uploads(older_than=float("inf")) == []


def test_an_upload_over_the_limit_is_refused_and_nothing_is_left(contents: ContentStore) -> None:
    big = b"x" * ((1 << 20) + 1)
    with pytest.raises(ContentTooLargeError, match="upload limit"):
        contents.put(hashlib.sha256(big).hexdigest(), chunks(big, 65536))
    assert contents.stored() == []
    assert contents.stale_uploads(older_than=float("inf")) == []


def test_an_upload_given_up_midway_leaves_nothing(contents: ContentStore) -> None:
    with contents.upload(SHA) as upload:
        upload.write(DATA[:100])  # the client went away: no commit
    assert not contents.exists(SHA)
    assert contents.stale_uploads(older_than=float("inf")) == []


def test_a_damaged_blob_is_detected_on_the_way_out_and_no_file_is_left(
    tmp_path: Path,
) -> None:
    contents = ContentStore(BlobStore(f"file://{tmp_path / 'blobs'}"))
    contents.put(SHA, [DATA])
    stored = tmp_path / "blobs" / "contents" / "sha256" / SHA
    stored.write_bytes(DATA[:-1] + b"!")
    with pytest.raises(CorruptStateError, match="damaged"):
        contents.copy_to(SHA, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_missing_blob_is_a_blob_store_error(contents: ContentStore, tmp_path: Path) -> None:
    assert contents.stat(SHA) is None
    with pytest.raises(BlobStoreError, match="missing"):
        contents.copy_to(SHA, tmp_path / "out")


def test_a_name_that_is_not_a_sha256_is_refused(contents: ContentStore) -> None:
    for bad in ("../../etc/passwd", SHA.upper(), SHA[:-1], SHA + "\n"):
        with pytest.raises(ValueError, match="SHA-256"):
            contents.upload(bad)


def test_concurrent_uploads_of_one_file_store_it_once(tmp_path: Path) -> None:
    contents = ContentStore(BlobStore(f"file://{tmp_path / 'blobs'}"))
    barrier = threading.Barrier(4)
    outcomes: list[bool] = []

    def upload() -> None:
        with contents.upload(SHA) as upload:
            barrier.wait()
            for chunk in chunks(DATA):
                upload.write(chunk)
            outcomes.append(upload.commit())

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 4 and True in outcomes
    assert (tmp_path / "blobs" / "contents" / "sha256" / SHA).read_bytes() == DATA
    assert os.listdir(tmp_path / "blobs" / "contents" / "uploads") == []


def test_unusable_storage_is_a_blob_store_error(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("")
    contents = ContentStore(BlobStore(f"file://{tmp_path / 'not-a-folder'}"))
    with pytest.raises(BlobStoreError):
        contents.put(SHA, [DATA])


def _age_stored_blob(contents: ContentStore, sha: str, when: float) -> None:
    """Make the stored blob look last changed at ``when`` (as if stored long ago)."""
    path = contents.blobs.path(contents.key(sha))
    if contents.blobs.is_local:
        os.utime(path, (when, when))
    else:  # fsspec's memory store keeps the time on the file object
        contents.blobs.filesystem.store[path].created = datetime.fromtimestamp(when, UTC)


def test_a_touch_renews_a_stored_files_age_and_a_delete_takes_its_mark(
    contents: ContentStore,
) -> None:
    contents.put(SHA, chunks(DATA))
    _age_stored_blob(contents, SHA, time.time() - 7200)
    assert [info.modified < time.time() - 3600 for info in contents.stored()] == [True]
    before = time.time() - 1  # the stores keep whole seconds or better

    contents.touch(SHA)

    assert [info.modified >= before for info in contents.stored()] == [True]
    renewed = contents.age(SHA)
    assert renewed is not None and renewed.modified >= before and renewed.size == len(DATA)
    contents.delete(SHA)
    assert contents.age(SHA) is None and contents.stored() == []
    assert not contents.blobs.filesystem.exists(contents.blobs.path(f"{TOUCHED}/{SHA}"))


def test_uploading_a_stored_file_again_renews_its_age(contents: ContentStore) -> None:
    contents.put(SHA, chunks(DATA))
    _age_stored_blob(contents, SHA, time.time() - 7200)
    before = time.time() - 1
    assert contents.put(SHA, chunks(DATA)) is False
    renewed = contents.age(SHA)
    assert renewed is not None and renewed.modified >= before


def test_a_stored_file_and_its_name_are_synced_to_disk_before_put_returns(
    tmp_path: Path, synced: list[str]
) -> None:
    contents = ContentStore(BlobStore(f"file://{tmp_path / 'blobs'}"), max_size=1 << 20)

    assert contents.put(SHA, chunks(DATA)) is True

    final = contents.blobs.path(contents.key(SHA))
    assert len(synced) == 2, synced
    assert "/contents/uploads/" in synced[0], "the upload's bytes, before it is renamed"
    assert synced[1] == final.rsplit("/", 1)[0], "then the folder holding its name"
