"""The per-host dependency cache and archive unpacking: once, verified, and safe.

Real files, a real ``file://`` content store, real threads and processes racing for a file;
hostile archives built byte by byte (``..`` members, links out, device files, a zip bomb).
"""

from __future__ import annotations

import hashlib
import io
import multiprocessing
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from steward.artifacts.archives import ArchiveRejectedError, unpack
from steward.errors import CorruptStateError
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.taskmanager.dependency_cache import DependencyCache
from steward.wire.jobs import Dependency, DependencyKind


@pytest.fixture
def contents(tmp_path: Path) -> ContentStore:
    return ContentStore(BlobStore(f"file://{tmp_path / 'storage'}"))


def stored(contents: ContentStore, data: bytes, filename: str, **fields: object) -> Dependency:
    sha = hashlib.sha256(data).hexdigest()
    contents.put(sha, [data])
    kind = fields.pop("kind", DependencyKind.FILE)
    return Dependency(kind=kind, filename=filename, sha256=sha, size=len(data), **fields)  # type: ignore[arg-type]


def tar_bytes(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


# ---------------------------------------------------------------- fetching


def test_a_file_is_fetched_once_verified_and_read_only(
    contents: ContentStore, tmp_path: Path
) -> None:
    dependency = stored(contents, b"a,b\n1,2\n", "data.csv")
    cache = DependencyCache(contents, tmp_path / "cache")
    local = cache.fetch(dependency)
    assert Path(local.path).name == "data.csv"
    assert Path(local.path).read_bytes() == b"a,b\n1,2\n"
    assert Path(local.path).stat().st_mode & 0o222 == 0
    contents.delete(dependency.sha256)  # the second fetch must not need the store
    assert cache.fetch(dependency) == local


def test_the_same_bytes_under_another_name_are_linked_not_fetched_again(
    contents: ContentStore, tmp_path: Path
) -> None:
    first = stored(contents, b"x = 1\n", "a.py", kind=DependencyKind.PY_FILE)
    cache = DependencyCache(contents, tmp_path / "cache")
    cache.fetch(first)
    contents.delete(first.sha256)
    second = first.model_copy(update={"filename": "b.py"})
    path = Path(cache.fetch(second).path)
    assert path.name == "b.py" and path.read_bytes() == b"x = 1\n"


def test_damaged_stored_bytes_never_reach_the_cache(contents: ContentStore, tmp_path: Path) -> None:
    dependency = stored(contents, b"payload", "f.bin")
    blob = tmp_path / "storage" / "contents" / "sha256" / dependency.sha256
    blob.write_bytes(b"PAYLOAD")
    cache = DependencyCache(contents, tmp_path / "cache")
    with pytest.raises(CorruptStateError, match="damaged"):
        cache.fetch(dependency)
    folder = tmp_path / "cache" / "files" / dependency.sha256
    assert [p.name for p in folder.iterdir()] == []


def test_threads_needing_one_archive_fetch_and_unpack_it_once(
    contents: ContentStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tar_bytes((member("environment/bin/tool"), b"#!/bin/sh\n"))
    dependency = stored(
        contents, data, "env.tar.gz", kind=DependencyKind.ARCHIVE, alias="environment"
    )
    copies: list[str] = []
    real_copy = ContentStore.copy_to

    def counting_copy(self: ContentStore, sha256: str, destination: Path) -> int:
        copies.append(sha256)
        return real_copy(self, sha256, destination)

    monkeypatch.setattr(ContentStore, "copy_to", counting_copy)
    cache = DependencyCache(contents, tmp_path / "cache")
    barrier = threading.Barrier(6)
    results = []

    def fetch() -> None:
        barrier.wait()
        results.append(cache.fetch(dependency))

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(copies) == 1
    assert len({(r.path, r.packed) for r in results}) == 1
    assert (Path(results[0].path) / "environment" / "bin" / "tool").is_file()
    assert Path(results[0].packed or "").name == "env.tar.gz"


def _fetch_in_process(storage: str, cache_root: str, dependency_json: str) -> str:
    contents = ContentStore(BlobStore(storage))
    dependency = Dependency.model_validate_json(dependency_json)
    return DependencyCache(contents, Path(cache_root)).fetch(dependency).path


def test_processes_of_one_host_share_the_cache(contents: ContentStore, tmp_path: Path) -> None:
    dependency = stored(contents, b"shared\n" * 100_000, "big.txt")
    arguments = (contents.blobs.url, str(tmp_path / "cache"), dependency.model_dump_json())
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        paths = pool.starmap(_fetch_in_process, [arguments] * 3)
    assert len(set(paths)) == 1
    assert Path(paths[0]).read_bytes() == b"shared\n" * 100_000
    assert [p.name for p in Path(paths[0]).parent.iterdir()] == ["big.txt"]


# ---------------------------------------------------------------- hostile archives


def test_a_member_outside_the_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(tar_bytes((member("../escaped.txt"), b"owned")))
    with pytest.raises(ArchiveRejectedError):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists()


def test_a_symlink_out_and_a_write_through_it_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(
        tar_bytes(
            (member("lib", tarfile.SYMTYPE, str(outside)), None),
            (member("lib/owned.txt"), b"owned"),
        )
    )
    with pytest.raises(ArchiveRejectedError):
        unpack(archive, tmp_path / "out")
    assert list(outside.iterdir()) == []


def test_a_relative_symlink_climbing_out_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tgz"
    archive.write_bytes(tar_bytes((member("up", tarfile.SYMTYPE, "../../etc"), None)))
    with pytest.raises(ArchiveRejectedError):
        unpack(archive, tmp_path / "out")


def test_device_files_and_fifos_are_refused(tmp_path: Path) -> None:
    for kind in (tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE):
        archive = tmp_path / f"dev-{kind!r}.tar.gz"
        archive.write_bytes(tar_bytes((member("disk", kind), None)))
        with pytest.raises(ArchiveRejectedError):
            unpack(archive, tmp_path / f"out-{kind!r}")


def test_a_venv_pack_interpreter_link_is_kept(tmp_path: Path) -> None:
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(
        tar_bytes(
            (member("bin", tarfile.DIRTYPE), None),
            (member("bin/python", tarfile.SYMTYPE, "/usr/bin/python3"), None),
            (member("bin/python3", tarfile.SYMTYPE, "python"), None),
        )
    )
    unpack(archive, tmp_path / "out")
    assert (tmp_path / "out" / "bin" / "python").readlink() == Path("/usr/bin/python3")


def test_a_zip_bomb_is_cut_off_by_the_bytes_really_inflated(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("zeros.bin", b"\0" * (8 << 20))
    assert archive.stat().st_size < 100_000
    with pytest.raises(ArchiveRejectedError, match="more than"):
        unpack(archive, tmp_path / "out", max_bytes=1 << 20)


def test_zip_members_with_dot_dot_or_links_are_refused(tmp_path: Path) -> None:
    cases = (("../x.txt", 0o100644), ("/abs.txt", 0o100644), ("link", 0o120777))
    for number, (name, mode) in enumerate(cases):
        archive = tmp_path / f"evil-{number}.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zipped.writestr(info, "/etc/passwd")
        with pytest.raises(ArchiveRejectedError):
            unpack(archive, tmp_path / f"out-{number}")
    assert not (tmp_path / "x.txt").exists()


def test_an_unknown_archive_kind_is_refused_permanently(tmp_path: Path) -> None:
    archive = tmp_path / "env.rar"
    archive.write_bytes(b"Rar!")
    with pytest.raises(ArchiveRejectedError) as caught:
        unpack(archive, tmp_path / "out")
    assert caught.value.permanent is True
