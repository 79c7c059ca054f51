"""Starting a child process the way every kit starts its servers: in a process group of its own
(so it can be signalled and killed as a group), stdin closed, stdout and stderr appended to
one log file (its folder made if need be); and whether a process still runs."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import psutil


def spawn_logged(
    argv: list[str], log: Path, *, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``cwd`` in its own process group, its output appended to ``log``;
    ``env`` replaces the environment if given."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
            env=None if env is None else dict(env),
        )


def pid_alive(pid: int | None) -> bool:
    """True while ``pid`` exists and is not a zombie (its parent, or PID 1 in a container,
    may be slow to reap it); False for None (no process was started)."""
    if pid is None:
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
