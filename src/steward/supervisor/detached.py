"""Processes started detached (the managed ZooKeeper's JVMs, a local cluster's JobManagers and
TaskManagers), and signalling only the ones we started.

A pid alone is not an identity: after a reboot or a long run the pid in a state file may
belong to anything. A recorded process counts as ours only if its pid, its start time and a
marker in its command line (a path of its own, such as its zoo.cfg) all still match.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from steward.errors import ManagedZooKeeperError

logger = logging.getLogger(__name__)

# psutil derives start times from the boot time, which can be reported a second apart.
_CREATE_TIME_TOLERANCE = 1.0
_POLL_INTERVAL = 0.05
# First line of each start in a server's log; readers show what follows the latest one.
LOG_START_MARKER = "--- steward: starting"
LOG_TAIL_LINES = 25


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines a detached process wrote to its log since its latest start."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    latest = text[text.rfind(LOG_START_MARKER) :] if LOG_START_MARKER in text else text
    return "\n".join(latest.splitlines()[-lines:])


@dataclass(frozen=True)
class ProcessRecord:
    """What identifies a process we started: pid, start time, and a marker in its argv."""

    pid: int
    create_time: float
    marker: str


def spawn(
    command: Sequence[str], log_path: Path, marker: str
) -> tuple[subprocess.Popen[bytes], ProcessRecord]:
    """Start ``command`` in its own session, output appended to ``log_path``.

    Its own session keeps a Ctrl-C in the starting terminal, or the end of a CLI command,
    from reaching the server.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        log.write(f"{LOG_START_MARKER} at {stamp}: {' '.join(command)}\n".encode())
        log.flush()
        child = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=log_path.parent,
            start_new_session=True,
        )
    record = ProcessRecord(child.pid, psutil.Process(child.pid).create_time(), marker)
    logger.info("started pid=%d log=%s", child.pid, log_path)
    return child, record


def find_live(record: ProcessRecord) -> psutil.Process | None:
    """The recorded process if it still runs and is still the one we started, else None."""
    try:
        process = psutil.Process(record.pid)
        if abs(process.create_time() - record.create_time) > _CREATE_TIME_TOLERANCE:
            return None
        if process.status() == psutil.STATUS_ZOMBIE:
            # Its argv is gone already; pid and start time still identify it while it dies.
            return None if _exited(process) else process
        argv = process.cmdline()
        # Empty for a moment after Popen returns (the kernel sets argv late in exec): then
        # pid and start time alone identify it.
        if argv and record.marker not in argv:
            return None
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return process


def is_frozen(process: psutil.Process) -> bool:
    """Whether the process is stopped by a signal (SIGSTOP)."""
    try:
        return bool(process.status() == psutil.STATUS_STOPPED)
    except psutil.NoSuchProcess:
        return False


def terminate(processes: Sequence[psutil.Process], *, graceful: bool, timeout: float) -> None:
    """Stop ``processes`` and wait until they are gone (reaped if they are our children).

    Graceful is SIGTERM, then SIGKILL for whatever still runs after ``timeout``.
    """
    for process in processes:
        _signal(process, graceful=graceful)
    alive = _wait_gone(processes, timeout)
    if alive and graceful:
        logger.warning("SIGKILL after SIGTERM timeout pids=%s", [p.pid for p in alive])
        for process in alive:
            _signal(process, graceful=False)
        alive = _wait_gone(alive, timeout)
    if alive:
        pids = [p.pid for p in alive]
        raise ManagedZooKeeperError(f"processes {pids} did not exit within {timeout}s of SIGKILL")


def _wait_gone(processes: Sequence[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Poll until every process is gone; those still running at the deadline.

    Not psutil.wait_procs: it waits for a zombie that is not our child until its parent reaps
    it, and a container whose pid 1 never reaps would make every stop time out.
    """
    deadline = time.monotonic() + timeout
    alive = list(processes)
    while True:
        alive = [process for process in alive if _still_running(process)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(_POLL_INTERVAL)


def _still_running(process: psutil.Process) -> bool:
    try:
        if not process.is_running():  # also False once the pid belongs to another process
            return False
        return process.status() != psutil.STATUS_ZOMBIE or not _exited(process)
    except psutil.NoSuchProcess:
        return False


def _signal(process: psutil.Process, *, graceful: bool) -> None:
    try:
        if graceful:
            process.terminate()
            # A frozen JVM holds SIGTERM pending until it runs again.
            process.resume()
        else:
            process.kill()
    except psutil.NoSuchProcess:
        pass


def _exited(zombie: psutil.Process) -> bool:
    """Whether a zombie is wholly dead; reaps it if it is our child.

    A JVM's main thread shows as a zombie while its other threads, and the sockets they share
    (the server's ports), may live on for a moment: only when the last thread is gone is the
    process gone.
    """
    try:
        zombie.wait(timeout=0)  # waitpid for our child: succeeds once every thread exited
    except psutil.TimeoutExpired:
        return bool(zombie.num_threads() <= 1)
    except (psutil.NoSuchProcess, ChildProcessError):
        pass
    return True
