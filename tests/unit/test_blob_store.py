"""The blob store on its own: round trips, atomic writes, checksums, and its error contract.

Most tests use ``file://`` under ``tmp_path`` (the default backend); the same contract runs on
fsspec's ``memory://`` filesystem, a second implementation that is not a local disk.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.errors import BlobMissingError, BlobStoreError, CorruptStateError, is_unavailable
from steward.store.blob import BlobRef, BlobStore, sha256_hex
from support import run_interleaved


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def store(root: Path) -> BlobStore:
    return BlobStore(f"file://{root}")


@pytest.fixture
def memory_store() -> Iterator[BlobStore]:
    # fsspec's memory filesystem is one process-wide dict: a fresh root per test keeps
    # tests apart, and the cleanup keeps the dict small.
    name = f"steward-test-{secrets.token_hex(4)}"
    store = BlobStore(f"memory://{name}")
    yield store
    with contextlib.suppress(FileNotFoundError):  # no folder is made where none is needed
        store._fs.rm(f"/{name}", recursive=True)


def _file(root: Path, key: str) -> Path:
    return root / key


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("payload", [b"", b"x", b"\x00\xff" * 1000, os.urandom(256 * 1024)])
def test_given_a_written_blob_when_read_by_key_or_ref_then_the_payload_comes_back(
    store: BlobStore, payload: bytes
) -> None:
    ref = store.put("jobgraphs/job-1/blob", payload)

    assert ref == BlobRef("jobgraphs/job-1/blob", sha256_hex(payload))
    assert store.get(ref) == payload
    assert store.get("jobgraphs/job-1/blob") == payload
    assert store.exists("jobgraphs/job-1/blob")
    assert [info.key for info in store.list("jobgraphs")] == ["jobgraphs/job-1/blob"]


def test_given_blobs_when_deleted_then_they_are_gone_and_deleting_again_is_harmless(
    store: BlobStore,
) -> None:
    store.put("a/one", b"1")
    store.put("a/two", b"2")

    store.delete("a/one")
    store.delete("a/one")

    assert not store.exists("a/one")
    assert [info.key for info in store.list("a")] == ["a/two"]
    assert store.list("nothing-here") == []


def test_given_a_jobs_last_blob_when_deleted_then_its_folder_goes_and_the_prefix_stays(
    store: BlobStore, root: Path
) -> None:
    store.put("jobgraphs/job-1/one", b"1")
    store.put("jobgraphs/job-1/two", b"2")
    store.put("jobgraphs/job-2/one", b"3")

    store.delete("jobgraphs/job-1/one")
    assert (root / "jobgraphs" / "job-1").is_dir()  # its other blob is still there

    store.delete("jobgraphs/job-1/two")
    store.delete("jobgraphs/job-2/one")

    assert not (root / "jobgraphs" / "job-1").exists()
    assert not (root / "jobgraphs" / "job-2").exists()
    assert (root / "jobgraphs").is_dir()
    store.put("jobgraphs/job-1/three", b"4")  # the job's folder is made again
    assert store.get("jobgraphs/job-1/three") == b"4"


def test_given_writers_and_deleters_of_one_jobs_folder_when_they_race_then_none_fails(
    store: BlobStore,
) -> None:
    # Each thread writes a blob of the job and deletes it: the folder goes with a last blob
    # while another thread is between making it and creating its file (the switch interval
    # is cut so that they interleave there often).
    failures: list[str] = []

    def churn(thread: int) -> None:
        try:
            for n in range(1000):
                key = f"jobgraphs/job-1/{thread}-{n}"
                assert store.get(store.put(key, b"graph")) == b"graph"
                store.delete(key)
        except Exception as exc:
            failures.append(repr(exc))

    run_interleaved([threading.Thread(target=churn, args=(thread,)) for thread in range(4)])

    assert failures == []


def test_given_unique_keys_when_generated_then_no_two_are_equal(store: BlobStore) -> None:
    keys = {store.unique_key("jobgraphs/job-1", "-suffix") for _ in range(1000)}

    assert len(keys) == 1000
    assert all(key.startswith("jobgraphs/job-1/") and key.endswith("-suffix") for key in keys)


def test_given_a_ref_with_another_digest_when_read_then_corrupt_state_is_raised(
    store: BlobStore,
) -> None:
    ref = store.put("a/blob", b"payload")

    with pytest.raises(CorruptStateError, match="sha256 differs"):
        store.get(BlobRef(ref.key, sha256_hex(b"another payload")))


# ---------------------------------------------------------------- atomic writes


def test_given_a_write_in_progress_when_a_reader_looks_before_it_is_published_then_it_sees_no_blob(
    store: BlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Freeze the writer at the last moment before it publishes the blob: the bytes are all on
    # disk, but a reader of the key must still find nothing rather than a partial blob.
    seen: list[BaseException | bytes] = []
    real_replace = os.replace

    def replace_after_a_reader_looked(source: str, destination: str) -> None:
        try:
            seen.append(store.get("a/blob"))
        except BlobStoreError as exc:
            seen.append(exc)
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace_after_a_reader_looked)

    store.put("a/blob", b"payload" * 1000)

    assert len(seen) == 1
    assert isinstance(seen[0], BlobStoreError)
    assert "missing" in str(seen[0])
    assert store.get("a/blob") == b"payload" * 1000
    assert sorted(path.name for path in (root / "a").iterdir()) == ["blob"]


def test_given_a_write_that_fails_before_publishing_when_read_then_nothing_was_published(
    store: BlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replace_fails(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace_fails)

    with pytest.raises(BlobStoreError, match="No space left"):
        store.put("a/blob", b"payload")

    assert not store.exists("a/blob")
    assert list((root / "a").iterdir()) == []  # not even the temporary file


def test_given_a_put_when_it_returns_then_the_bytes_and_the_new_name_were_synced_to_disk(
    store: BlobStore, root: Path, synced: list[str]
) -> None:
    # A rename alone is not durable: the acknowledged job's graph must survive a power loss
    # (rule 2). The real fsync runs; what each call synced is noted by its file's path.

    store.put("a/blob", b"payload")

    final = str(root / "a" / "blob")
    assert len(synced) == 4, synced
    temporary = synced[0]
    assert temporary.startswith(f"{final}.") and temporary.endswith(".tmp"), (
        "the bytes, before the rename publishes them"
    )
    assert synced[1] == str(root / "a"), "then the folder, which holds the new name"
    # The put made both folders (the store's root too): each is a new name in its parent.
    assert synced[2:] == [str(root), str(root.parent)], "then each new folder's parent"


def test_given_a_blob_rewritten_concurrently_when_read_in_a_loop_then_every_read_is_whole(
    store: BlobStore,
) -> None:
    payloads = [bytes([n]) * (512 * 1024) for n in range(2)]
    store.put("a/blob", payloads[0])
    done = threading.Event()
    reads: list[bytes] = []
    failures: list[BaseException] = []

    def reader() -> None:
        while not done.is_set():
            try:
                reads.append(store.get("a/blob"))
            except BaseException as exc:
                failures.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(30):
            store.put("a/blob", payloads[n % 2])
    finally:
        done.set()
        thread.join(timeout=10)

    assert failures == []
    assert reads, "the reader never read"
    assert all(data in payloads for data in reads)


# ---------------------------------------------------------------- corruption


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[:-10], "truncated"),
        (lambda data: data[:-1] + bytes([data[-1] ^ 0x01]), "checksum mismatch"),
        (lambda data: data[data.index(b"\n") + 1 :], "missing or damaged header"),
        (lambda data: b"", "missing or damaged header"),
        (lambda data: data.replace(b"length=", b"length=1", 1), "truncated|header"),
    ],
    ids=["truncated", "flipped-byte", "no-header", "empty-file", "wrong-length"],
)
def test_given_a_damaged_blob_file_when_read_then_corrupt_state_is_raised(
    store: BlobStore, root: Path, damage: object, message: str
) -> None:
    store.put("a/blob", b'{"schema": 1, "payload": "' + b"x" * 200 + b'"}')
    path = _file(root, "a/blob")
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]

    with pytest.raises(CorruptStateError, match=message):
        store.get("a/blob")


def test_given_no_blob_under_a_key_when_read_then_blob_store_error_says_it_is_missing(
    store: BlobStore,
) -> None:
    store.put("a/other", b"x")  # the storage is there and answers

    with pytest.raises(BlobMissingError, match="missing") as caught:
        store.get("a/never-written")

    assert not isinstance(caught.value, CorruptStateError)
    assert not is_unavailable(caught.value)


def test_given_the_storage_root_gone_when_read_then_it_is_unavailable_not_missing(
    store: BlobStore, root: Path
) -> None:
    ref = store.put("a/blob", b"payload")
    root.rename(root.with_name("unmounted"))  # an NFS share dropped: nothing is lost

    with pytest.raises(BlobStoreError, match="is not there") as caught:
        store.get(ref)

    assert not isinstance(caught.value, BlobMissingError)
    assert is_unavailable(caught.value)


# ---------------------------------------------------------------- unwritable storage


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """``folder`` refuses new names meanwhile: by its mode, or under root (which ignores
    modes) by the immutable attribute; skipped where the filesystem has none."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    chattr = shutil.which("chattr")
    set_immutable = [str(chattr), "+i", str(folder)]
    if chattr is None or subprocess.run(set_immutable, check=False).returncode != 0:
        pytest.skip("root ignores modes, and this filesystem cannot make a folder immutable")
    try:
        yield
    finally:
        subprocess.run([str(chattr), "-i", str(folder)], check=True)


def test_given_a_read_only_directory_when_written_then_blob_store_error_names_the_key(
    store: BlobStore, root: Path
) -> None:
    store.put("a/first", b"1")
    with (
        unwritable(root / "a"),
        pytest.raises(BlobStoreError, match=r"cannot write blob a/second to file://"),
    ):
        store.put("a/second", b"2")
    assert not store.exists("a/second")


def test_given_a_key_whose_parent_is_a_file_when_written_then_blob_store_error_names_the_key(
    store: BlobStore, root: Path
) -> None:
    # Works as root too (permissions do not stop root; a file where a directory must be does).
    store.put("a/file", b"1")

    expected = r"cannot write blob a/file/child to file://"
    with pytest.raises(BlobStoreError, match=expected) as caught:
        store.put("a/file/child", b"2")

    assert isinstance(caught.value.__cause__, OSError)
    with pytest.raises(BlobStoreError, match="a/file/child"):
        store.get("a/file/child")
    assert store.get("a/file") == b"1"


def test_given_failing_storage_when_used_then_each_failed_operation_is_reported_once(
    root: Path,
) -> None:
    failed: list[str] = []
    store = BlobStore(f"file://{root}", on_error=failed.append)
    store.put("a/file", b"1")
    with pytest.raises(BlobMissingError):
        store.get("a/never-written")  # an answer from the storage, not a failure of it
    assert failed == []

    with pytest.raises(BlobStoreError):
        store.put("a/file/child", b"2")  # a file where a directory must be
    root.rename(root.with_name("unmounted"))
    with pytest.raises(BlobStoreError, match="is not there"):
        store.get("a/file")

    assert failed == ["put", "get"]


# ---------------------------------------------------------------- keys and URLs


@pytest.mark.parametrize(
    "key", ["", "../x", "a/../../x", "/abs", "a//b", "a/", "a b", ".", "a/./b", "x\n"]
)
def test_given_an_invalid_key_when_used_then_value_error_is_raised_and_nothing_is_written(
    store: BlobStore, root: Path, key: str
) -> None:
    for call in (
        lambda: store.put(key, b"x"),
        lambda: store.get(key),
        lambda: store.delete(key),
        lambda: store.exists(key),
    ):
        with pytest.raises(ValueError, match="invalid blob key"):
            call()
    assert not root.exists() or list(root.rglob("*")) == []
    assert not (root.parent / "x").exists()


def test_given_an_unknown_scheme_when_opened_then_blob_store_error_names_the_driver() -> None:
    with pytest.raises(BlobStoreError, match=r"nosuch.*driver"):
        BlobStore("nosuch://x")


def test_given_a_memory_url_when_used_then_the_same_contract_holds(
    memory_store: BlobStore,
) -> None:
    ref = memory_store.put("jobgraphs/job-1/blob", b"payload")

    assert memory_store.get(ref) == b"payload"
    assert memory_store.exists("jobgraphs/job-1/blob")
    assert [info.key for info in memory_store.list("jobgraphs")] == ["jobgraphs/job-1/blob"]
    with pytest.raises(BlobStoreError, match="missing"):
        memory_store.get("jobgraphs/job-1/other")
    with pytest.raises(ValueError, match="invalid blob key"):
        memory_store.put("../x", b"x")

    memory_store.delete("jobgraphs/job-1/blob")
    assert not memory_store.exists("jobgraphs/job-1/blob")
    assert memory_store.list("jobgraphs") == []


def test_given_a_damaged_memory_blob_when_read_then_corrupt_state_is_raised(
    memory_store: BlobStore,
) -> None:
    memory_store.put("a/blob", b"payload")
    path = memory_store._path("a/blob")
    memory_store._fs.pipe_file(path, memory_store._fs.cat_file(path)[:-3])

    with pytest.raises(CorruptStateError, match="truncated"):
        memory_store.get("a/blob")
