"""The kernel's help in holding an attempt's processes together (Linux; a no-op elsewhere).

An attempt is more than its runner's process group: PySpark's worker daemon calls
``os.setpgid(0, 0)``, so Python workers leave the group, and user code may start processes in a
session of their own (``start_new_session``, a double fork with ``setsid``). rule 3 needs
*every* process of the attempt seen and killed before the lease goes. Two kernel features do
it, each behind one function here so the rest of Steward stays portable:

- **a cgroup v2 per attempt** (:class:`Cgroup`): the TaskManager creates
  ``<its own cgroup>/steward/<its pid>/<token>`` and moves the runner in right after the
  spawn; the runner joins it again itself before it starts anything (:func:`enter_attempt`),
  so no fork can happen outside it. Every descendant is born inside, whatever its group,
  session or parent, and cannot leave it (only a process allowed to write ``cgroup.procs``
  elsewhere could). ``cgroup.events`` says whether a live process is left (zombies do not
  count) and ``cgroup.kill`` SIGKILLs them all at once, forks in flight included. Used where a
  cgroup2 file system is mounted and writable (root, or a delegated subtree), which on this
  project's hosts (a v1/v2 hybrid with ``/sys/fs/cgroup/unified``) it is.
- **the runner as child subreaper** (``PR_SET_CHILD_SUBREAPER``, :func:`become_subreaper`):
  a process orphaned inside the attempt (its parent died, as in a double fork) is re-parented
  to the runner instead of to init, so while the runner lives every process of the attempt is
  one of its descendants and can be walked with psutil (:mod:`steward.supervisor.reaping`).
  This works on every Linux and covers the runner's own kills (its dead-man's switch after the
  TaskManager died, and the end of a normal attempt), which need no cgroup.

Why not a separate supervising process per attempt as the subreaper: it would sit between the
TaskManager and the runner, change which pid the TaskManager signals on cancel and have to
relay stdin, the events pipe and signals, and it could itself be killed; the runner already is
the one process that lives exactly as long as the attempt, and the cgroup covers what is left
after the runner was SIGKILLed. Where neither a cgroup nor this module's Linux calls are
available, the TaskManager falls back to the process group and an environment token
(:data:`TOKEN_ENV`, inherited by every descendant that does not scrub its environment).

Nothing here raises for an unsupported platform: each function answers None or False.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import functools
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

TOKEN_ENV = "STEWARD_ATTEMPT_TOKEN"
"""Environment variable naming the attempt a process belongs to (inherited by descendants)."""
CGROUP_ENV = "STEWARD_ATTEMPT_CGROUP"
"""Environment variable with the path of the attempt's cgroup, for the runner to join."""

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_STEWARD_DIR = "steward"
_lock = threading.Lock()


# ---------------------------------------------------------------------- subreaper


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants; False where unsupported."""
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_CHILD_SUBREAPER) failed errno=%d", ctypes.get_errno())
        return False
    return True


def is_subreaper() -> bool:
    """Whether this process is a child subreaper (False where unsupported)."""
    libc = _libc()
    if libc is None:
        return False
    flag = ctypes.c_int(0)
    if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return False
    return flag.value != 0


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


# ---------------------------------------------------------------------- cgroups


class Cgroup:
    """One cgroup v2 directory holding one attempt's processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"Cgroup({str(self.path)!r})"

    @classmethod
    def create(cls, token: str) -> Cgroup | None:
        """A new, empty cgroup for the attempt ``token``; None where cgroups are unusable."""
        parent = attempt_parent()
        if parent is None:
            return None
        path = parent / token
        try:
            path.mkdir()
        except OSError as exc:
            log.warning("could not create a cgroup path=%s cause=%r", path, exc)
            return None
        return cls(path)

    def add(self, pid: int) -> bool:
        """Move ``pid`` (a process, with its threads) into this cgroup; False if it failed."""
        try:
            (self.path / "cgroup.procs").write_text(f"{pid}\n")
        except OSError as exc:
            log.warning("could not move pid=%d into cgroup=%s cause=%r", pid, self.path, exc)
            return False
        return True

    def populated(self) -> bool:
        """True while a live (non-zombie) process is in it; False once it is empty or gone."""
        try:
            events = (self.path / "cgroup.events").read_text()
        except OSError as exc:
            if _removed(exc):
                return False
            raise
        return "populated 1" in events

    def pids(self) -> list[int]:
        """The live processes in it now."""
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except OSError as exc:
            if _removed(exc):
                return []
            raise

    def kill(self) -> None:
        """SIGKILL every process in it at once (``cgroup.kill``: no fork escapes)."""
        try:
            (self.path / "cgroup.kill").write_text("1\n")
        except FileNotFoundError:
            return
        except OSError:  # kernels before 5.14: no cgroup.kill; one pass per pid
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the (empty) cgroup; False while a process is still in it."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                log.warning("could not remove cgroup=%s cause=%r", self.path, exc)
            return False
        return True


def _removed(exc: OSError) -> bool:
    """Whether ``exc`` says the cgroup is gone: ENOENT once removed, ENODEV for a read that
    opened its file just before another thread removed it."""
    return exc.errno in (errno.ENOENT, errno.ENODEV)


def attempt_parent() -> Path | None:
    """``<own cgroup>/steward/<pid>`` on the cgroup2 mount, created once; None if unusable.

    Created lazily by the first attempt of this process; the folders of earlier processes
    that are gone (a SIGKILLed TaskManager) are emptied and removed then.
    """
    with _lock:
        return _parent_of(os.getpid())  # by pid: a forked child must not use its parent's


@functools.cache
def _parent_of(pid: int) -> Path | None:
    parent = _make_parent(pid)
    if parent is not None:
        _sweep_stale(parent.parent)
        atexit.register(_remove_quietly, parent)  # empty by then, unless attempts outlive us
    return parent


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def own_cgroup() -> Cgroup | None:
    """The attempt's cgroup, if this process is in the one its TaskManager made for it."""
    expected, relative = os.environ.get(CGROUP_ENV), _own_relative_path()
    if not expected or not relative or relative == "/" or not expected.endswith(relative):
        return None
    return Cgroup(Path(expected))


def enter_attempt() -> None:
    """Called by the runner first thing: become the subreaper, join the attempt's cgroup.

    The TaskManager moved the runner into the cgroup already; joining again (a no-op then)
    makes sure that nothing the runner starts was ever outside, whatever the timing.
    """
    become_subreaper()
    path = os.environ.get(CGROUP_ENV)
    # Already inside: a runner started as a proxy user may not write cgroup.procs itself.
    if path and own_cgroup() is None:
        Cgroup(Path(path)).add(os.getpid())


def _make_parent(pid: int) -> Path | None:
    mount, relative = _mount(), _own_relative_path()
    if mount is None or relative is None:
        return None
    parent = mount / relative.lstrip("/") / _STEWARD_DIR / str(pid)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        log.info("no cgroup per attempt (cannot create %s: %r); process groups only", parent, exc)
        return None
    log.info("attempts contained in cgroups under %s", parent)
    return parent


def _sweep_stale(steward_dir: Path) -> None:
    for folder in steward_dir.iterdir():
        if not folder.is_dir() or not folder.name.isdigit():
            continue
        if int(folder.name) == os.getpid() or psutil.pid_exists(int(folder.name)):
            continue
        for child in (p for p in folder.iterdir() if p.is_dir()):
            cgroup = Cgroup(child)
            if cgroup.populated():
                log.warning("killing processes left by a dead process cgroup=%s", child)
                cgroup.kill()
            cgroup.remove()
        _remove_quietly(folder)


def _mount() -> Path | None:
    try:
        partitions = psutil.disk_partitions(all=True)
    except (OSError, psutil.Error):
        return None
    mounts = [Path(p.mountpoint) for p in partitions if p.fstype == "cgroup2"]
    return mounts[0] if mounts else None


def _own_relative_path() -> str | None:
    # The kernel's own answer; psutil has no view of cgroups. "0::<path>" is the v2 line.
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    return next((line[3:] for line in lines if line.startswith("0::")), None)
