"""A class-data-sharing archive of the ZooKeeper server's classes, recorded once per machine.

A server's JVM spends most of its start loading, parsing and verifying the classes of its jars
(about 2.0 s of CPU to serving on this project's 2-core machine). HotSpot can map classes it
loaded once from an archive instead (class-data sharing, CDS): with one recorded from a first
run, a start costs about 1.0 s (docs/performance.md, "ZooKeeper starts from a class archive").
A test run starts a hundred servers; the quick start's cluster three.

The archive is recorded by a *training* server: a standalone server in a throwaway folder,
started with ``-XX:ArchiveClassesAtExit``, run until it serves, and stopped gracefully (the JVM
writes the archive as it exits). Every later start of a server on the same Java and classpath
adds ``-XX:SharedArchiveFile``. The archive lives in the user's cache
(``$XDG_CACHE_HOME/steward/zookeeper-classes/<key>.jsa``, default ``~/.cache``), keyed by the
Java runtime and every classpath entry (path, size, modification time): a new Java or a new
ZooKeeper jar gets a new archive. HotSpot checks the archive again when it maps it (its own
build, the classpath's jars) and runs without it if anything differs, so a stale archive costs
the saving, never a start.

A server told ``-Xshare:off`` (in ``$SERVER_JVMFLAGS``, which the managed ZooKeeper honours as
zkServer.sh does) neither records nor maps one.

A start touches the archive it maps (at most once a day), and a recording removes the archives
no start mapped for :data:`FORGET_AFTER` (an old Java's, a replaced jar's), those whose
classpath is gone (``<key>.classpath`` lists it: a deleted checkout's virtualenv) and failure
markers a day old: the folder holds about one archive (12 MB) per ZooKeeper installation in
use.

Only one process records: the training takes a lock (``<key>.lock``) without waiting, and a
start that finds it taken goes on without the archive. A training that fails leaves
``<key>.failed`` with the reason, and no start tries again for :data:`RETRY_AFTER` (a machine
whose Java cannot record pays one attempt an hour, not one a start); a cache that cannot be
written is never tried.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from steward.errors import StewardError
from steward.zookeeper.install import ZooKeeperInstall

logger = logging.getLogger(__name__)

ARCHIVE_FOLDER = "zookeeper-classes"
RETRY_AFTER = 3600.0
"""Seconds after a failed training before a start tries again."""
FORGET_AFTER = 30 * 86400.0
"""Seconds without a start mapping it after which an archive is removed."""
_TOUCH_EVERY = 86400.0
_FAILURE_KEPT = 86400.0

Training = Callable[[ZooKeeperInstall], None]
"""Runs one server of the given installation until it serves, then stops it gracefully."""


def archive_folder() -> Path:
    """Where the archives are kept: ``$XDG_CACHE_HOME/steward/zookeeper-classes``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "steward" / ARCHIVE_FOLDER


def archive_key(install: ZooKeeperInstall) -> str:
    """What the archive depends on: the Java runtime and every classpath entry, by path, size
    and modification time (a replaced jar or an upgraded JVM makes another key)."""
    digest = hashlib.sha256()
    java = Path(install.java).resolve()
    runtime = [java, java.parent.parent / "lib" / "server" / "libjvm.so"]
    for entry in [*runtime, *(Path(item) for item in install.classpath)]:
        try:
            stat = entry.stat()
        except OSError:
            digest.update(f"{entry}\0missing\0".encode())
            continue
        digest.update(f"{entry}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:24]


def with_class_archive(
    install: ZooKeeperInstall, train: Training, folder: Path | None = None
) -> ZooKeeperInstall:
    """``install`` whose servers map the archive of its classes: recorded first by ``train``
    if this machine has none yet and no other process is recording it; ``install`` unchanged
    while there is none."""
    if "-Xshare:off" in install.jvm_options:
        return install
    folder = folder or archive_folder()
    key = archive_key(install)
    archive = folder / f"{key}.jsa"
    if not archive.exists() and not _failed_lately(folder / f"{key}.failed"):
        _record(install, train, folder, key)
    if not _touched(archive):
        return install
    return replace(install, jvm_options=(f"-XX:SharedArchiveFile={archive}", *install.jvm_options))


def _record(install: ZooKeeperInstall, train: Training, folder: Path, key: str) -> None:
    archive = folder / f"{key}.jsa"
    with _claimed(folder / f"{key}.lock") as claimed:
        if not claimed or archive.exists():
            return
        partial = folder / f"{key}.{os.getpid()}.partial"
        started = time.monotonic()
        try:
            _recorded(install, train, partial).replace(archive)
            (folder / f"{key}.classpath").write_text("".join(f"{e}\n" for e in install.classpath))
        except (StewardError, OSError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            logger.warning("no ZooKeeper class archive (starts stay slower): %s", reason)
            with contextlib.suppress(OSError):
                (folder / f"{key}.failed").write_text(f"{reason}\n")
            return
        finally:
            with contextlib.suppress(OSError):
                partial.unlink()
        logger.info(
            "recorded the ZooKeeper class archive path=%s seconds=%.1f",
            archive,
            time.monotonic() - started,
        )
        _forget_unused(folder)


def _touched(archive: Path) -> bool:
    """Whether ``archive`` exists; its modification time moved to now if a day old (the
    last use :func:`_forget_unused` goes by)."""
    try:
        modified = archive.stat().st_mtime
    except OSError:
        return False
    if time.time() - modified > _TOUCH_EVERY:
        with contextlib.suppress(OSError):  # a cache the user cannot write: still mapped
            os.utime(archive)
    return True


def _forget_unused(folder: Path) -> None:
    """Remove the archives no start mapped for :data:`FORGET_AFTER` or whose classpath is
    gone (a deleted checkout's virtualenv), and the failure markers a day old (a broken
    installation's, a test's), each with the files kept beside it."""
    for kept in [*folder.glob("*.jsa"), *folder.glob("*.failed")]:
        with contextlib.suppress(OSError):
            if _unused(kept):
                for suffix in (".jsa", ".lock", ".classpath", ".failed"):
                    kept.with_suffix(suffix).unlink(missing_ok=True)
                logger.info("removed an unused ZooKeeper class archive path=%s", kept)


def _unused(kept: Path) -> bool:
    age = time.time() - kept.stat().st_mtime
    if kept.suffix == ".failed":
        return age > _FAILURE_KEPT
    if age > FORGET_AFTER:
        return True
    try:
        entries = kept.with_suffix(".classpath").read_text().splitlines()
    except FileNotFoundError:
        return False
    return not all(Path(entry).exists() for entry in entries)


def _recorded(install: ZooKeeperInstall, train: Training, partial: Path) -> Path:
    """``partial``, the archive a training run of ``install`` wrote as its JVM exited."""
    train(
        replace(install, jvm_options=(f"-XX:ArchiveClassesAtExit={partial}", *install.jvm_options))
    )
    if not partial.is_file() or partial.stat().st_size == 0:
        raise StewardError("the training server's JVM wrote no archive as it exited")
    return partial


def _failed_lately(marker: Path) -> bool:
    try:
        return time.time() - marker.stat().st_mtime < RETRY_AFTER
    except OSError:
        return False


@contextlib.contextmanager
def _claimed(lock: Path) -> Iterator[bool]:
    """Hold ``lock`` (an ``flock``) for the block if no other process does; False if one does
    or the folder cannot be written."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = lock.open("a")
    except OSError as exc:
        logger.debug("class archive folder not writable path=%s error=%s", lock.parent, exc)
        yield False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
