"""Paths and moves under a job's checkpoint dir (local paths and file:// URLs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.artifacts import checkpoint_dirs


def test_join_works_for_paths_and_urls() -> None:
    assert checkpoint_dirs.join("/ck/job/", "stages", "a") == "/ck/job/stages/a"
    assert checkpoint_dirs.join("s3a://b/ck", "streaming", "q") == "s3a://b/ck/streaming/q"


@pytest.mark.parametrize("as_url", [False, True])
def test_replace_moves_a_folder_over_an_unrecorded_one(tmp_path: Path, as_url: bool) -> None:
    base = f"file://{tmp_path}" if as_url else str(tmp_path)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "part-0").write_text("new")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "stale").write_text("old")

    checkpoint_dirs.replace(checkpoint_dirs.join(base, "new"), checkpoint_dirs.join(base, "target"))

    assert sorted(p.name for p in (tmp_path / "target").iterdir()) == ["part-0"]
    assert not (tmp_path / "new").exists()
    assert checkpoint_dirs.exists(checkpoint_dirs.join(base, "target"))
    assert not checkpoint_dirs.exists(checkpoint_dirs.join(base, "new"))


def test_remove_deletes_a_folder_and_tolerates_absence(tmp_path: Path) -> None:
    (tmp_path / "scratch" / "1-abc").mkdir(parents=True)
    (tmp_path / "scratch" / "1-abc" / "part-0").write_text("x")

    assert checkpoint_dirs.remove(str(tmp_path / "scratch"))
    assert not (tmp_path / "scratch").exists()
    assert not checkpoint_dirs.remove(str(tmp_path / "scratch"))
