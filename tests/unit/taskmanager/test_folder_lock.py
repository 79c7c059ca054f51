"""A TaskManager folder's lock (steward.taskmanager.folder_lock): held by a live process (a
real second process here), free once that process is killed, never shared across a folder
removed and made again."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from steward.taskmanager.folder_lock import (
    LOCK_FILE,
    FolderInUseError,
    holder,
    lock_own,
    try_lock,
)
from support import wait_until

HOLD = """
import sys, time
from pathlib import Path
from steward.taskmanager.folder_lock import lock_own
held = lock_own(Path(sys.argv[1]), 5.0)
print("held", flush=True)
time.sleep(600)
"""


def test_a_folder_a_live_process_holds_cannot_be_taken_until_it_is_killed(tmp_path: Path) -> None:
    folder = tmp_path / "tm-a"
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        assert holder(folder) == other.pid
        assert try_lock(folder) is None
        with pytest.raises(FolderInUseError, match=str(other.pid)):
            lock_own(folder, 0.3)

        other.send_signal(signal.SIGKILL)
        other.wait(10)

        taken = wait_until(lambda: try_lock(folder), 5, message="the lock is free")
        taken.release()
    finally:
        other.kill()
        other.wait(10)


def test_a_released_lock_can_be_taken_again(tmp_path: Path) -> None:
    folder = tmp_path / "tm-b"
    with lock_own(folder, 1.0):
        assert try_lock(folder) is None
    again = try_lock(folder)
    assert again is not None
    again.release()


def test_a_missing_folder_is_not_made_by_a_successor(tmp_path: Path) -> None:
    assert try_lock(tmp_path / "gone") is None
    assert not (tmp_path / "gone").exists()


def test_a_lock_on_a_removed_file_is_not_the_folders_lock(tmp_path: Path) -> None:
    folder = tmp_path / "tm-c"
    first = lock_own(folder, 1.0)
    # The folder is removed and made again while ``first`` holds the old file's lock: the new
    # file's lock is free, and taking it is taking the folder's.
    (folder / LOCK_FILE).unlink()
    second = try_lock(folder)
    assert second is not None
    assert try_lock(folder) is None
    first.release()
    second.release()
