"""A warm spare's folder is handed back for removal once no process of the spare is left:
when the spare dies in the pool, and when the attempt it was handed to ends; never while the
spare (or the attempt running on it) lives. Real processes stand in for Spark spares, as in
test_spare_pool.py; the spares' logs go through the log cap.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_spare_pool import FAKE_SPARE

from steward.taskmanager.spares import SparePool
from support import wait_until

DEADLINE = 30.0


@pytest.fixture
def done_folders() -> list[Path]:
    return []


@pytest.fixture
def pool(tmp_path: Path, done_folders: list[Path]) -> Iterator[SparePool]:
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_SPARE)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    spares = SparePool(
        limit=1,
        spark_master="local[1]",
        deadman_timeout=5.0,
        folder=tmp_path / ".spares",
        free_slots=lambda: 1,
        python=str(fake),
        replace_delay=0.2,
        log_max_size=64 * 1024,
        on_folder_done=done_folders.append,
    ).start()
    yield spares
    spares.stop()


def test_a_dead_spares_folder_is_handed_back_and_a_live_ones_is_not(
    pool: SparePool, done_folders: list[Path], tmp_path: Path
) -> None:
    first = wait_until(pool.spares, DEADLINE)[0]
    wait_until(pool.ready_pids, DEADLINE)
    pool.reconcile()
    assert done_folders == [], "a live spare keeps its folder"
    assert first.group.capper is not None, "its log is capped"

    first.kill()

    wait_until(lambda: done_folders, DEADLINE, message="folder handed back")
    assert done_folders == [tmp_path / ".spares" / "spare-1"]


def test_a_handed_out_spares_folder_is_handed_back_once_its_attempt_is_gone(
    pool: SparePool, done_folders: list[Path], tmp_path: Path
) -> None:
    wait_until(pool.ready_pids, DEADLINE)
    spare = pool.take({}, "local[1]")
    assert spare is not None
    pool.reconcile()
    assert tmp_path / ".spares" / "spare-1" not in done_folders, "its attempt runs"

    spare.kill()
    assert spare.wait_gone(DEADLINE)

    wait_until(
        lambda: tmp_path / ".spares" / "spare-1" in done_folders, DEADLINE, message="handed back"
    )
