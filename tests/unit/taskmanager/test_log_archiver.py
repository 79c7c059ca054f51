"""The TaskManager's log archiver and the log archive it writes to (a real local storage).

An ended attempt's log is copied whole and marked; an unmounted storage (its folder renamed
away) is retried with a doubling delay and never recreated in its place, and the attempt's
folder is held until the copy succeeds; a log a process still has open waits; an earlier run's
unarchived logs are found at start; the cleaner keeps a held folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steward.errors import BlobStoreError
from steward.store.blob import BlobStore
from steward.store.log_archive import LogArchive, last_lines_start
from steward.taskmanager.log_archiver import FIRST_DELAY, MARKER, LogArchiver
from steward.taskmanager.workdir_cleaner import WorkdirCleaner
from support import Clock


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    folder = tmp_path / "storage"
    folder.mkdir()
    return folder


@pytest.fixture
def archive(storage: Path) -> LogArchive:
    return LogArchive(BlobStore(f"file://{storage}"))


def write_log(root: Path, job_id: str, attempt: int, data: bytes) -> Path:
    folder = root / job_id / str(attempt)
    folder.mkdir(parents=True)
    (folder / "runner.log").write_bytes(data)
    return folder


def read(archive: LogArchive, job_id: str, attempt: int) -> bytes | None:
    opened = archive.open(job_id, attempt)
    if opened is None:
        return None
    with opened:
        return opened.read()


def test_an_ended_attempts_log_is_copied_whole_and_marked(
    tmp_path: Path, archive: LogArchive, storage: Path
) -> None:
    root = tmp_path / "work"
    data = b"".join(b"line %d\n" % n for n in range(100_000))  # larger than one block
    folder = write_log(root, "job-a", 2, data)
    archiver = LogArchiver(root, archive, set)
    archiver.attempt_ended("job-a", 2)
    assert archiver.holds("job-a", 2)

    assert archiver.run_once() == [("job-a", 2)]

    assert read(archive, "job-a", 2) == data
    assert (folder / MARKER).read_text() == f"{len(data)}\n"
    assert not archiver.holds("job-a", 2)
    assert oct((storage / "logs" / "job-a" / "2.log").stat().st_mode & 0o777) == "0o600"
    assert [e.key for e in archive.listing()] == ["logs/job-a/2.log"]


def test_an_unmounted_storage_is_retried_with_a_doubling_delay_and_not_recreated(
    tmp_path: Path, archive: LogArchive, storage: Path
) -> None:
    root, clock, failures = tmp_path / "work", Clock(), []
    write_log(root, "job-b", 1, b"the whole log\n")
    archiver = LogArchiver(root, archive, set, clock=clock, on_failure=lambda: failures.append(1))
    away = storage.with_name("storage-unmounted")
    storage.rename(away)
    archiver.attempt_ended("job-b", 1)

    assert archiver.run_once() == []
    assert not storage.exists(), "an absent storage is not created in its place"
    assert archiver.run_once() == [], "not due before its delay"
    clock.now += FIRST_DELAY
    assert archiver.run_once() == []
    clock.now += FIRST_DELAY  # the delay doubled: not due yet
    assert archiver.run_once() == []
    assert len(failures) == 2
    assert archiver.holds("job-b", 1)

    away.rename(storage)
    clock.now += FIRST_DELAY
    assert archiver.run_once() == [("job-b", 1)]
    assert read(archive, "job-b", 1) == b"the whole log\n"


def test_a_log_a_process_still_writes_waits_for_it(tmp_path: Path, archive: LogArchive) -> None:
    root, clock = tmp_path / "work", Clock()
    folder = write_log(root, "job-c", 1, b"first lines\n")
    in_use = {str(folder / "runner.log")}
    archiver = LogArchiver(root, archive, lambda: in_use, clock=clock)
    archiver.attempt_ended("job-c", 1)

    assert archiver.run_once() == []
    assert read(archive, "job-c", 1) is None
    with (folder / "runner.log").open("ab") as log:
        log.write(b"the capper's last line\n")
    in_use.clear()
    clock.now += 1.0
    assert archiver.run_once() == [("job-c", 1)]
    assert read(archive, "job-c", 1) == b"first lines\nthe capper's last line\n"


def test_an_earlier_runs_unarchived_logs_are_found_at_start(
    tmp_path: Path, archive: LogArchive
) -> None:
    root = tmp_path / "work"
    write_log(root, "job-d", 1, b"lost with its TaskManager\n")
    (write_log(root, "job-d", 2, b"archived before\n") / MARKER).write_text("16\n")
    (root / ".spares" / "1").mkdir(parents=True)
    archiver = LogArchiver(root, archive, set)

    assert archiver.scan_leftovers() == 1
    assert archiver.pending() == [("job-d", 1)]
    assert archiver.run_once() == [("job-d", 1)]
    assert read(archive, "job-d", 1) == b"lost with its TaskManager\n"


def test_an_attempt_without_a_log_is_done_at_once(tmp_path: Path, archive: LogArchive) -> None:
    archiver = LogArchiver(tmp_path / "work", archive, set)
    archiver.attempt_ended("job-e", 1)  # rejected before its folder was made
    assert archiver.run_once() == [("job-e", 1)]
    assert read(archive, "job-e", 1) is None


def test_the_cleaner_keeps_a_folder_whose_log_is_held(tmp_path: Path) -> None:
    root, clock = tmp_path / "work", Clock()
    folder = write_log(root, "job-f", 1, b"not archived\n")
    held = {("job-f", 1)}

    def guard(_job: str, _attempt: int | None, action: object) -> bool:
        assert callable(action)
        action()
        return True

    cleaner = WorkdirCleaner(
        root, 0.0, guard, keep=lambda job, attempt: (job, attempt) in held, clock=clock
    )
    cleaner.attempt_ended("job-f", 1)
    assert cleaner.run_once() == []
    assert (folder / "runner.log").exists()
    held.clear()
    assert cleaner.run_once() == [folder]
    assert not folder.exists()


def test_reading_a_missing_log_is_none_and_an_unreadable_storage_an_error(
    tmp_path: Path, archive: LogArchive, storage: Path
) -> None:
    assert archive.open("never", 1) is None
    write_log(tmp_path / "work", "job-g", 1, b"x\n")
    archive.put("job-g", 1, tmp_path / "work" / "job-g" / "1" / "runner.log")
    os.chmod(storage / "logs" / "job-g" / "1.log", 0)
    if os.geteuid() != 0:  # root reads anything
        with pytest.raises(BlobStoreError, match="archived log of job-g/1"):
            archive.open("job-g", 1)


@pytest.mark.parametrize(
    ("data", "lines", "start"),
    [(b"a\nb\nc\n", 2, 2), (b"a\nb\nc", 1, 4), (b"a\nb\n", 5, 0), (b"", 1, 0)],
)
def test_last_lines_start_finds_where_the_last_lines_begin(
    tmp_path: Path, data: bytes, lines: int, start: int
) -> None:
    path = tmp_path / "log"
    path.write_bytes(data)
    with path.open("rb") as log:
        assert last_lines_start(log, lines) == start
