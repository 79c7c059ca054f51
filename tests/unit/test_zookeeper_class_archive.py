"""The ZooKeeper class archive's bookkeeping: when a start records one, maps one, or goes on
without (the JVM's side is tests/integration/test_managed_zookeeper.py's)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from steward.zookeeper import class_archive
from steward.zookeeper.class_archive import archive_key, with_class_archive
from steward.zookeeper.install import ZooKeeperInstall

RECORD = "-XX:ArchiveClassesAtExit="
MAP = "-XX:SharedArchiveFile="


@pytest.fixture
def install(tmp_path: Path) -> ZooKeeperInstall:
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ("zookeeper-3.9.5.jar", "netty-common.jar"):
        (jars / name).write_bytes(b"jar " + name.encode())
    return ZooKeeperInstall(
        java=Path("/usr/bin/java"),
        classpath=tuple(str(jar) for jar in sorted(jars.iterdir())),
        jvm_options=("-Dlog4j2.configurationFile=x",),
    )


class Trainer:
    """Stands in for a training server: writes what the JVM would at ``-XX:ArchiveClassesAtExit``
    (or nothing, or fails), and counts its runs."""

    def __init__(self, writes: bytes | None = b"archive", error: Exception | None = None) -> None:
        self.writes, self.error = writes, error
        self.runs: list[ZooKeeperInstall] = []

    def __call__(self, install: ZooKeeperInstall) -> None:
        self.runs.append(install)
        if self.error is not None:
            raise self.error
        target = next(o for o in install.jvm_options if o.startswith(RECORD))[len(RECORD) :]
        if self.writes is not None:
            Path(target).write_bytes(self.writes)


def test_the_first_start_records_the_archive_and_every_start_maps_it(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    trainer, folder = Trainer(), tmp_path / "cache"

    first = with_class_archive(install, trainer, folder)
    second = with_class_archive(install, trainer, folder)

    (training,) = trainer.runs
    assert training.jvm_options[0].startswith(RECORD)
    assert training.jvm_options[1:] == install.jvm_options  # the server's own options kept
    archive = folder / f"{archive_key(install)}.jsa"
    assert archive.read_bytes() == b"archive"
    assert first == second
    assert first.jvm_options == (f"{MAP}{archive}", *install.jvm_options)
    assert list(folder.glob("*.partial")) == []


def test_the_key_follows_the_jars_and_the_java(install: ZooKeeperInstall) -> None:
    before = archive_key(install)
    assert archive_key(install) == before
    jar = Path(install.classpath[0])
    jar.write_bytes(b"a new jar of another size")
    assert archive_key(install) != before
    moved = ZooKeeperInstall(Path("/opt/jdk/bin/java"), install.classpath, install.jvm_options)
    assert archive_key(moved) != archive_key(install)


@pytest.mark.parametrize(
    "trainer",
    [Trainer(writes=None), Trainer(writes=b""), Trainer(error=OSError("no space left"))],
    ids=["no archive written", "empty archive", "training failed"],
)
def test_a_failed_training_leaves_the_start_as_it_was_and_is_not_retried_for_an_hour(
    install: ZooKeeperInstall, tmp_path: Path, trainer: Trainer
) -> None:
    folder = tmp_path / "cache"

    assert with_class_archive(install, trainer, folder) == install
    assert with_class_archive(install, trainer, folder) == install
    assert len(trainer.runs) == 1
    marker = folder / f"{archive_key(install)}.failed"
    assert marker.read_text().strip()
    assert not (folder / f"{archive_key(install)}.jsa").exists()
    assert list(folder.glob("*.partial")) == []

    # An hour later a start tries again
    old = time.time() - class_archive.RETRY_AFTER - 1
    os.utime(marker, (old, old))
    with_class_archive(install, trainer, folder)
    assert len(trainer.runs) == 2


def test_while_another_process_records_a_start_goes_on_without(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    trainer, folder = Trainer(), tmp_path / "cache"
    folder.mkdir()
    with (folder / f"{archive_key(install)}.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: flock says taken
        assert with_class_archive(install, trainer, folder) == install
    assert trainer.runs == []


def test_a_cache_that_cannot_be_written_is_never_trained_in(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    trainer, blocked = Trainer(), tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert with_class_archive(install, trainer, blocked / "cache") == install
    assert trainer.runs == []


def test_a_recording_removes_archives_unused_or_of_a_gone_classpath_and_old_failures(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    stale, gone, recent = folder / "0ld.jsa", folder / "gone.jsa", folder / "recent.jsa"
    for archive in (stale, gone, recent):
        archive.write_bytes(b"x")
        archive.with_suffix(".lock").touch()
    month = time.time() - class_archive.FORGET_AFTER - 1
    os.utime(stale, (month, month))
    gone.with_suffix(".classpath").write_text(f"{install.classpath[0]}\n{tmp_path}/deleted.jar\n")
    recent.with_suffix(".classpath").write_text(f"{install.classpath[0]}\n")
    old_failure, new_failure = folder / "broken.failed", folder / "failing.failed"
    for marker in (old_failure, new_failure):
        marker.write_text("the JVM exited\n")
        marker.with_suffix(".lock").touch()
    day = time.time() - 86400 - 1
    os.utime(old_failure, (day, day))

    with_class_archive(install, Trainer(), folder)

    for removed in (stale, gone, old_failure):
        assert not removed.exists() and not removed.with_suffix(".lock").exists()
    assert new_failure.exists()
    assert not gone.with_suffix(".classpath").exists()
    assert recent.exists()
    recorded = folder / f"{archive_key(install)}.classpath"
    assert recorded.read_text().splitlines() == list(install.classpath)


def test_a_start_marks_the_archive_it_maps_as_used(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    with_class_archive(install, Trainer(), folder)
    archive = folder / f"{archive_key(install)}.jsa"
    week = time.time() - 7 * 86400
    os.utime(archive, (week, week))

    with_class_archive(install, Trainer(), folder)

    assert time.time() - archive.stat().st_mtime < 60


def test_a_server_told_xshare_off_neither_records_nor_maps(
    install: ZooKeeperInstall, tmp_path: Path
) -> None:
    trainer, folder = Trainer(), tmp_path / "cache"
    with_class_archive(install, trainer, folder)  # an archive exists
    off = ZooKeeperInstall(install.java, install.classpath, ("-Xshare:off",))
    assert with_class_archive(off, trainer, folder) == off
    assert len(trainer.runs) == 1
