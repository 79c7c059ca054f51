"""Remembered hashes of large files: reused for the same file, never for a changed one."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from steward.client import job_files
from steward.client.file_hashes import MIN_SIZE, FileHashes


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def big_file(path: Path, fill: bytes = b"a") -> Path:
    path.write_bytes(fill * MIN_SIZE)
    return path


def counting_digests(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    read: list[Path] = []
    real = job_files._digest

    def digest(path: Path) -> tuple[str, int]:
        read.append(path)
        return real(path)

    monkeypatch.setattr(job_files, "_digest", digest)
    return read


def test_a_large_file_is_read_once_for_two_submissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = counting_digests(monkeypatch)
    archive = big_file(tmp_path / "env.tar.gz")

    first = job_files.collect(archives=[f"{archive}#environment"])
    second = job_files.collect(archives=[f"{archive}#environment"])

    assert first == second
    assert first[0].dependency.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert read == [archive]


def test_a_changed_file_is_hashed_again_even_with_its_old_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = counting_digests(monkeypatch)
    archive = big_file(tmp_path / "env.tar.gz")
    before = job_files.collect(files=[archive])[0].dependency.sha256
    stat = archive.stat()

    big_file(archive, b"b")  # same size; then the old modification time put back
    os.utime(archive, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = job_files.collect(files=[archive])[0].dependency.sha256

    assert after != before
    assert after == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert read == [archive, archive]


def test_small_files_are_not_remembered(tmp_path: Path) -> None:
    small = tmp_path / "helper.py"
    small.write_text("X = 1\n")
    job_files.collect(py_files=[small])
    hashes = FileHashes()
    assert hashes.sha256_of(small, small.stat()) is None


def test_an_unreadable_cache_is_an_empty_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "steward" / "file-hashes.json"
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    archive = big_file(tmp_path / "a.zip")
    entry = job_files.collect(files=[archive])[0]
    assert entry.dependency.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
