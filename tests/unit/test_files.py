"""steward.files: a file is written whole or not at all, with its mode from the first byte,
and two writers of one path never rename each other's temporary file."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from steward import files
from steward.files import TEMPORARY_SUFFIX, write_atomically


def test_a_write_publishes_the_whole_file_with_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "folder" / "secret"
    write_atomically(target, "s3cret\n", mode=0o600)
    assert target.read_text() == "s3cret\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["secret"]


def test_the_mode_holds_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        write_atomically(tmp_path / "public.pem", b"cert", mode=0o644, durable=True)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "public.pem").stat().st_mode) == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomically(target, "old")
    with pytest.raises(TypeError):
        # Data whose buffer cannot be taken: the write fails once its temporary exists.
        write_atomically(target, object())  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_concurrent_writers_of_one_path_each_publish_whole(tmp_path: Path) -> None:
    target = tmp_path / "shared"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(200):
                write_atomically(target, f"{n}" * 1000)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    text = target.read_text()
    assert len(text) == 1000 and len(set(text)) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMPORARY_SUFFIX)]


def test_a_durable_write_syncs_every_folder_it_made_in_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power loss cannot lose a new folder (and the blob in it): each folder made for the file
    is synced in its parent, deepest first, as is the file's own folder."""
    synced: list[str] = []
    monkeypatch.setattr(files, "sync_folder", synced.append)
    target = tmp_path / "jobgraphs" / "job-1" / "graph"
    (tmp_path / "jobgraphs").mkdir()

    write_atomically(target, b"graph", durable=True)

    assert synced == [str(tmp_path / "jobgraphs" / "job-1"), str(tmp_path / "jobgraphs")]
    synced.clear()
    write_atomically(target.with_name("again"), b"graph", durable=True)
    assert synced == [str(tmp_path / "jobgraphs" / "job-1")]  # nothing made this time


def test_a_write_whose_folder_is_removed_under_it_makes_the_folder_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A blob store removes a job's folder with its last blob: a writer of a new blob there
    # can meet the folder gone between making it and creating its file.
    target = tmp_path / "jobgraphs" / "job-1" / "graph"
    make_folders = files.make_folders
    removed = []

    def make_then_lose(folder: str) -> list[str]:
        made = make_folders(folder)
        if not removed:
            os.rmdir(folder)  # the deleter's rmdir, in between
            removed.append(folder)
        return made

    monkeypatch.setattr(files, "make_folders", make_then_lose)

    write_atomically(target, b"graph", durable=True)

    assert removed == [str(target.parent)]
    assert target.read_bytes() == b"graph"
