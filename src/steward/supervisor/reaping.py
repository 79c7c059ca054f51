"""Finding and SIGKILLing every process of an attempt, with psutil (portable).

Which processes belong to an attempt is asked of a *finder* (a function returning the live
processes now), because the answer depends on where it is asked: the runner asks for its
descendants (all of the attempt while it lives, being their subreaper), the TaskManager for
the attempt's cgroup members or, without one, its process group and environment token
(:mod:`steward.supervisor.containment`).

:func:`kill_all` kills in rounds: each round SIGKILLs every live process the finder returns
that was not signalled yet; a process that forked between the finding and its kill left a
child that the next round finds. A SIGKILLed process can fork no more, so once a round finds
nothing new, nothing of the attempt can start again. Processes are told apart by pid *and*
start time, so a reused pid is never taken for one already signalled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterable

import psutil

from steward.supervisor.containment import TOKEN_ENV

log = logging.getLogger(__name__)

Finder = Callable[[], Iterable[psutil.Process]]

_MAX_ROUNDS = 1000
_QUIET_ROUNDS = 2


def kill_all(find: Finder, *, exclude: Iterable[int] = ()) -> list[int]:
    """SIGKILL what ``find`` returns, in rounds, until a round finds nothing new; the pids."""
    spared = set(exclude)
    signalled: set[tuple[int, float]] = set()
    quiet_rounds = 0
    for _ in range(_MAX_ROUNDS):
        fresh = [
            (process, key)
            for process in find()
            if process.pid not in spared and (key := _identity(process)) not in signalled
        ]
        # Two quiet rounds: one /proc walk can miss a child whose parent is reaped mid-walk.
        quiet_rounds = 0 if fresh else quiet_rounds + 1
        if quiet_rounds == _QUIET_ROUNDS:
            break
        for process, key in fresh:
            signalled.add(key)
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGKILL)
    else:
        log.error("processes kept appearing after %d kill rounds", _MAX_ROUNDS)
    return sorted(pid for pid, _ in signalled)


def live(processes: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` that still exist and are not zombies."""
    found = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def descendants(pid: int) -> list[psutil.Process]:
    """The live descendants of ``pid`` (none if it is gone)."""
    try:
        return live(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def group_members(pgid: int) -> list[psutil.Process]:
    """The live members of process group ``pgid``."""
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(process.pid) == pgid:
                members.append(process)
    return live(members)


def marked(token: str) -> list[psutil.Process]:
    """The live processes whose environment carries the attempt token ``token``."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if process.environ().get(TOKEN_ENV) == token:
                found.append(process)
    return live(found)


def reap_children() -> None:
    """Reap every exited child of this process (for a subreaper whose work is done)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _identity(process: psutil.Process) -> tuple[int, float]:
    try:
        return (process.pid, process.create_time())
    except psutil.Error:
        return (process.pid, 0.0)
