"""The nemesis's storage freeze, on real read-only bind mounts: every member sees it, and it
comes undone.

Two bugs are behind these tests. A thaw that left the mount (``os.path.ismount`` cannot see a
bind mount of a directory onto itself) made every later freeze stack another: the storage
stayed read-only for the rest of the campaign, and the CI's short campaign retried submissions
708 times. And members on hosts of their own (``ip netns exec``, which gives each a mount
namespace of its own) never saw a freeze at all, while one started during a freeze kept a
read-only copy for good.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cluster import StorageFreezer, mounts_at
from support import wait_until


@pytest.fixture
def freezer(tmp_path: Path) -> Iterator[StorageFreezer]:
    storage = StorageFreezer(tmp_path / "storage with space")
    why_not = storage.available()
    try:
        if why_not is not None:
            pytest.skip(why_not)
        yield storage
    finally:
        storage.release()
        # Whatever a failing test stacked, the machine gets its directory back.
        for _ in range(20):
            if not mounts_at(storage.path):
                break
            subprocess.run(["umount", "-l", str(storage.path)], check=True)


def _writable(path: Path) -> bool:
    try:
        (path / "probe").write_text("x")
    except OSError as exc:
        assert exc.errno == errno.EROFS, exc
        return False
    return True


class _Member:
    """A process in a mount namespace of its own, a slave of this one, as ``ip netns exec``
    makes for every member of a ``--network`` campaign."""

    def __init__(self) -> None:
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            pytest.skip("needs unshare and nsenter (util-linux)")
        self._process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "slave", "sleep", "300"]
        )
        wait_until(self._in_own_namespace, 10.0, message="the member has its mount namespace")

    def _in_own_namespace(self) -> bool:
        own = Path(f"/proc/{self._process.pid}/ns/mnt").readlink()
        return own != Path("/proc/self/ns/mnt").readlink()

    def writable(self, path: Path) -> bool:
        touched = subprocess.run(
            ["nsenter", "-t", str(self._process.pid), "-m", "touch", str(path / "member")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert touched.returncode == 0 or "Read-only file system" in touched.stderr, touched
        return touched.returncode == 0

    def stop(self) -> None:
        self._process.kill()
        self._process.wait()


@pytest.fixture
def members() -> Iterator[list[_Member]]:
    started: list[_Member] = []
    yield started
    for member in started:
        member.stop()


def test_a_frozen_storage_refuses_writes_and_a_thawed_one_takes_them(
    freezer: StorageFreezer,
) -> None:
    for _ in range(3):
        freezer.freeze()
        assert mounts_at(freezer.path) == 2  # the shared base, the read-only one on it
        assert not _writable(freezer.path)
        freezer.thaw()
        assert mounts_at(freezer.path) == 1, "the read-only mount outlived its thaw"
        assert _writable(freezer.path)


def test_a_member_in_a_mount_namespace_of_its_own_sees_the_freeze_and_the_thaw(
    freezer: StorageFreezer, members: list[_Member]
) -> None:
    before = _Member()
    members.append(before)
    assert before.writable(freezer.path)

    freezer.freeze()
    assert not before.writable(freezer.path), "a member's own namespace missed the freeze"
    during = _Member()  # a member restarted during the fault
    members.append(during)
    assert not during.writable(freezer.path)

    freezer.thaw()
    assert before.writable(freezer.path)
    assert during.writable(freezer.path), "a member started during a freeze stayed frozen"


def test_the_availability_check_leaves_the_storage_writable(freezer: StorageFreezer) -> None:
    assert mounts_at(freezer.path) == 1
    assert _writable(freezer.path)


def test_a_thaw_after_the_mount_went_another_way_is_fine(freezer: StorageFreezer) -> None:
    freezer.freeze()
    subprocess.run(["umount", str(freezer.path)], check=True)
    freezer.thaw()
    freezer.thaw()
    assert _writable(freezer.path)


def test_release_takes_every_mount_away(freezer: StorageFreezer) -> None:
    freezer.freeze()
    freezer.release()
    assert mounts_at(freezer.path) == 0
    assert _writable(freezer.path)
