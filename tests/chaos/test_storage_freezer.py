"""The nemesis's storage freeze, on a real read-only bind mount: it must come undone.

A thaw that left the mount (``os.path.ismount`` cannot see a bind mount of a directory onto
itself) made every later freeze stack another, and the storage stayed read-only for the rest
of the campaign: the CI's short campaign retried submissions 708 times.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cluster import StorageFreezer, is_mount_point


@pytest.fixture
def freezer(tmp_path: Path) -> Iterator[StorageFreezer]:
    storage = StorageFreezer(tmp_path / "storage with space")
    why_not = storage.available()
    if why_not is not None:
        pytest.skip(why_not)
    yield storage
    # Whatever a failing test stacked, the machine gets its directory back.
    for _ in range(20):
        if not is_mount_point(storage.path):
            break
        subprocess.run(["umount", "-l", str(storage.path)], check=True)


def _writable(path: Path) -> bool:
    try:
        (path / "probe").write_text("x")
    except OSError as exc:
        assert exc.errno == errno.EROFS, exc
        return False
    return True


def test_a_frozen_storage_refuses_writes_and_a_thawed_one_takes_them(
    freezer: StorageFreezer,
) -> None:
    for _ in range(3):
        freezer.freeze()
        assert is_mount_point(freezer.path)
        assert not _writable(freezer.path)
        freezer.thaw()
        assert not is_mount_point(freezer.path), "the read-only mount outlived its thaw"
        assert _writable(freezer.path)


def test_the_availability_check_leaves_no_mount(freezer: StorageFreezer) -> None:
    assert not is_mount_point(freezer.path)
    assert _writable(freezer.path)


def test_a_thaw_after_the_mount_went_another_way_is_fine(freezer: StorageFreezer) -> None:
    freezer.freeze()
    subprocess.run(["umount", "-l", str(freezer.path)], check=True)
    freezer.thaw()
    freezer.thaw()
    assert _writable(freezer.path)
