"""Removing ended attempts' folders (steward.taskmanager.workdir_cleaner), on real folders.

Given a TaskManager work directory and its attempts' registry: a forgotten attempt's folder
goes once its retention has passed, never while the attempt is known again or while a process
still works in it; folders of earlier runs go once their last change is older than the
retention; a folder that cannot be removed is logged, and the cleaner goes on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.taskmanager.reporting import Attempts
from steward.taskmanager.workdir_cleaner import WorkdirCleaner, paths_in_use
from steward.testing.attempts import start_attempt
from steward.wire.heartbeat import StartAttempt
from support import Clock, wait_until


def attempt_folder(root: Path, job_id: str, attempt: int) -> Path:
    folder = root / job_id / str(attempt)
    (folder / "artifact").mkdir(parents=True)
    (folder / "artifact" / "job.py").write_text("def main(ctx):\n    pass\n")
    (folder / "runner.log").write_text("done\n")
    return folder


def start(job_id: str, attempt: int) -> StartAttempt:
    return start_attempt(job_id, attempt)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "tm-1"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def attempts() -> Attempts:
    return Attempts(slots=2)


@pytest.fixture
def sleeper() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(10)


def test_retention_zero_removes_an_ended_attempts_folder_and_its_empty_job_folder(
    root: Path, attempts: Attempts, caplog: pytest.LogCaptureFixture
) -> None:
    folder = attempt_folder(root, "job-a", 1)
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known)

    cleaner.attempt_ended("job-a", 1)
    with caplog.at_level(logging.INFO, logger="steward.taskmanager.workdir_cleaner"):
        assert cleaner.run_once() == [folder]

    assert not folder.exists() and not (root / "job-a").exists()
    assert list((root / ".trash").iterdir()) == []
    lines = [r.getMessage() for r in caplog.records if "removed" in r.getMessage()]
    assert lines == [f"attempt folder removed folder={folder}"]


def test_a_folder_stays_until_its_retention_has_passed(root: Path, attempts: Attempts) -> None:
    clock = Clock(time.time())
    folder = attempt_folder(root, "job-a", 1)
    sibling = attempt_folder(root, "job-a", 2)
    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known, clock=clock)
    cleaner.attempt_ended("job-a", 1)

    clock.now += 3599
    assert cleaner.run_once() == []
    assert folder.exists()

    clock.now += 2
    assert cleaner.run_once() == [folder]
    assert not folder.exists()
    assert sibling.exists(), "only the ended attempt's folder goes; its job folder stays"


def test_the_folder_of_an_attempt_known_again_is_kept(root: Path, attempts: Attempts) -> None:
    folder = attempt_folder(root, "job-a", 1)
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known)
    cleaner.attempt_ended("job-a", 1)
    # Re-offered after a rejection: the start is unpacking into the same folder.
    assert attempts.admit(start("job-a", 1), None, "") is not None

    assert cleaner.run_once() == []
    assert folder.exists()
    assert cleaner.pending() == [], "scheduled again only when it is forgotten again"


def test_a_folder_a_live_process_works_in_is_kept_until_it_is_gone(
    root: Path, attempts: Attempts, sleeper: list[subprocess.Popen[bytes]]
) -> None:
    folder = attempt_folder(root, "job-a", 1)
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], cwd=folder, stdin=subprocess.PIPE
    )
    sleeper.append(process)
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known)
    cleaner.attempt_ended("job-a", 1)

    assert cleaner.run_once() == []
    assert folder.exists()
    assert cleaner.pending() == [folder]

    assert process.stdin is not None
    process.stdin.close()
    process.wait(30)
    assert cleaner.run_once() == [folder]


def test_an_open_file_inside_keeps_the_folder(root: Path, attempts: Attempts) -> None:
    folder = attempt_folder(root, "job-a", 1)
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known)
    cleaner.attempt_ended("job-a", 1)
    with (folder / "runner.log").open("ab"):  # as the log capper holds it
        assert str(folder / "runner.log") in paths_in_use()
        assert cleaner.run_once() == []
    assert cleaner.run_once() == [folder]


def test_folders_of_earlier_runs_go_once_their_last_change_is_older_than_the_retention(
    root: Path, attempts: Attempts
) -> None:
    old = attempt_folder(root, "job-old", 3)
    recent = attempt_folder(root, "job-new", 1)
    old_spare = root / ".spares" / "spare-1"
    old_spare.mkdir(parents=True)
    (root / ".trash" / "half-removed").mkdir(parents=True)
    stranger = root / "job-old" / "notes"  # not an attempt folder: left alone
    stranger.mkdir()
    two_hours_ago = time.time() - 7200
    for path in (old, old / "runner.log", old / "artifact", old_spare, stranger):
        os.utime(path, (two_hours_ago, two_hours_ago))

    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known)
    cleaner.scan_leftovers()
    removed = cleaner.run_once()

    assert sorted(removed) == sorted([old, old_spare])
    assert recent.exists() and stranger.exists()
    assert list((root / ".trash").iterdir()) == []
    assert cleaner.pending() == [recent]


def test_a_recent_log_keeps_an_old_folder(root: Path, attempts: Attempts) -> None:
    old = attempt_folder(root, "job-a", 1)
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))  # the log was written just now

    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known)
    cleaner.scan_leftovers()

    assert cleaner.run_once() == []
    assert old.exists()


def test_a_folder_that_cannot_be_removed_is_logged_and_the_cleaner_goes_on(
    root: Path, attempts: Attempts, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = attempt_folder(root, "job-a", 1)
    (root / ".trash").write_text("not a folder")  # the move to .trash/ fails
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known)
    cleaner.attempt_ended("job-a", 1)

    with caplog.at_level(logging.WARNING, logger="steward.taskmanager.workdir_cleaner"):
        assert cleaner.run_once() == []

    assert stuck.exists()
    assert any("could not remove attempt folder" in r.getMessage() for r in caplog.records)


def test_the_thread_removes_a_folder_soon_after_it_ended(root: Path, attempts: Attempts) -> None:
    folder = attempt_folder(root, "job-a", 1)
    cleaner = WorkdirCleaner(root, 0.0, attempts.unless_known).start()
    try:
        cleaner.attempt_ended("job-a", 1)
        wait_until(lambda: not folder.exists(), 30, message="folder removed")
    finally:
        cleaner.stop()


def test_an_ended_attempts_scratch_goes_at_once_its_folder_after_the_retention(
    root: Path, attempts: Attempts
) -> None:
    clock = Clock(time.time())
    folder = attempt_folder(root, "job-a", 1)
    scratch = folder / "tmp"
    (scratch / "blockmgr-1" / "0c").mkdir(parents=True)
    (scratch / "blockmgr-1" / "0c" / "shuffle_0_0_0.data").write_bytes(b"x" * 4096)
    # The log is not archived yet: the attempt's folder waits for it, its scratch does not.
    cleaner = WorkdirCleaner(
        root, 3600.0, attempts.unless_known, keep=lambda _job, _attempt: True, clock=clock
    )

    cleaner.attempt_ended("job-a", 1)

    assert cleaner.run_once() == [scratch]
    assert not scratch.exists()
    assert (folder / "runner.log").read_text() == "done\n"
    assert cleaner.pending() == [folder]


def test_a_dead_spares_scratch_goes_at_once(root: Path, attempts: Attempts) -> None:
    clock = Clock(time.time())
    spare = root / ".spares" / "spare-1"
    (spare / "tmp" / "spark-1").mkdir(parents=True)
    (spare / "runner.log").write_text("warm\n")
    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known, clock=clock)

    cleaner.folder_ended(spare)

    assert cleaner.run_once() == [spare / "tmp"]
    assert (spare / "runner.log").exists()
    clock.now += 3601
    assert cleaner.run_once() == [spare]


def test_the_scratch_of_an_attempt_known_again_is_kept(root: Path, attempts: Attempts) -> None:
    scratch = attempt_folder(root, "job-a", 1) / "tmp"
    scratch.mkdir()
    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known)
    cleaner.attempt_ended("job-a", 1)
    # Re-offered after a rejection: its start is preparing the same folder.
    assert attempts.admit(start("job-a", 1), None, "") is not None

    assert cleaner.run_once() == []
    assert scratch.exists()


def test_an_earlier_runs_scratch_goes_at_start_its_folder_after_the_retention(
    root: Path, attempts: Attempts, sleeper: list[subprocess.Popen[bytes]]
) -> None:
    # A TaskManager SIGKILLed mid-shuffle: its attempts' and spare's scratch are left.
    attempt_scratch = attempt_folder(root, "job-a", 1) / "tmp"
    (attempt_scratch / "blockmgr-1").mkdir(parents=True)
    spare_scratch = root / ".spares" / "spare-1" / "tmp"
    (spare_scratch / "spark-1").mkdir(parents=True)
    dying = attempt_folder(root, "job-b", 2)  # its runner still dying, working in its folder
    (dying / "tmp").mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], cwd=dying, stdin=subprocess.PIPE
    )
    sleeper.append(process)
    cleaner = WorkdirCleaner(root, 3600.0, attempts.unless_known)

    cleaner.scan_leftovers()

    assert sorted(cleaner.run_once()) == sorted([attempt_scratch, spare_scratch])
    assert (root / "job-a" / "1" / "runner.log").exists()
    assert (root / ".spares" / "spare-1").is_dir()
    assert (dying / "tmp").is_dir(), "a folder a process works in keeps its scratch"
    assert process.stdin is not None
    process.stdin.close()
    process.wait(30)
    assert cleaner.run_once() == [dying / "tmp"]
