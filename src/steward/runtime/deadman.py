"""The runner's lifeline to its TaskManager: stdin, the dead-man's switch, the process group.

Owns fd 0 of the runner: :func:`read_launch_line` takes the launch document off it,
:func:`detach_stdin` moves the pipe out of the pipeline's reach, and :class:`DeadmanSwitch`
watches it from a daemon thread. When the parent stops writing (EOF, or silence for
``timeout`` seconds) the switch SIGKILLs every process of the attempt, then the runner, so an
attempt can never outlive a dead or frozen TaskManager by more than ``timeout`` (rule 4).
The timeout is measured on :mod:`steward.clock`, which counts a suspend of the host as the
ZooKeeper servers do, and a heartbeat that arrives after it has run out is too late.

"Every process of the attempt" is more than the runner's process group (PySpark's worker
daemon leaves it, user code may call ``setsid``): :func:`ensure_own_process_group` also makes
the runner the attempt's child subreaper and puts it in the attempt's cgroup
(:mod:`steward.supervisor.containment`), so that whatever the pipeline starts stays a descendant
of the runner, and a member of that cgroup, whatever its group or session. The kills
(:func:`kill_process_group`, :func:`kill_leftovers`) take descendants, group and cgroup
members together, in rounds until none is left (:mod:`steward.supervisor.reaping`), and the
runner last: while it lives, orphans of the attempt are re-parented to it, not lost to init.

The watcher is a thread, not a signal handler, because signal handlers only run between
Python bytecodes and a pipeline may sit in ``time.sleep`` or a py4j socket read for hours.
A thread runs whenever the main thread releases the GIL, which every blocking C call in the
standard library, py4j and PySpark does. A C extension that spins while holding the GIL would
stop it; only a separate watchdog process could cover that.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from typing import NoReturn

import psutil

from steward import clock
from steward.supervisor import containment, reaping
from steward.wire.runner_protocol import LaunchError

log = logging.getLogger(__name__)

MAX_LAUNCH_LINE = 16 * 1024 * 1024
_POLL_EVENTS = select.POLLIN | select.POLLHUP | select.POLLERR
_LAST_WORDS_WAIT = 0.5
"""Seconds the switch waits for its message to reach the log before it kills anyway."""


def read_launch_line(fd: int, timeout: float) -> tuple[bytes, bytes]:
    """Read fd up to its first newline within ``timeout`` seconds.

    Returns the line (without the newline) and whatever followed it (early heartbeats).
    Raises LaunchError on EOF, silence or a line longer than MAX_LAUNCH_LINE.
    """
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, _POLL_EVENTS)
    buffer = bytearray()
    while (newline := buffer.find(b"\n")) < 0:
        if len(buffer) > MAX_LAUNCH_LINE:
            raise LaunchError(f"launch document longer than {MAX_LAUNCH_LINE} bytes")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LaunchError(f"no launch document on stdin within {timeout:g}s")
        if not poller.poll(_millis(remaining)):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            got = f" (got {len(buffer)} bytes and no newline)" if buffer else ""
            raise LaunchError(f"stdin closed before a launch document was sent{got}")
        buffer += chunk
    return bytes(buffer[:newline]), bytes(buffer[newline + 1 :])


def detach_stdin() -> int:
    """Move the stdin pipe to a private, non-inheritable fd; fd 0 becomes /dev/null.

    A pipeline calling ``input()``, or a subprocess inheriting fd 0, would otherwise swallow
    the heartbeats or keep the pipe open after the runner died.
    """
    private = os.dup(0)
    os.set_inheritable(private, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return private


def ensure_own_process_group() -> int:
    """Lead a process group (the TaskManager's start_new_session already makes it so), and
    contain the attempt: become its child subreaper and join its cgroup, if it has one.

    Killing "our" group must never reach the shell or test runner that started us by hand.
    """
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)
    containment.enter_attempt()
    return os.getpgrp()


class DeadmanSwitch:
    """Calls ``fire`` (default: kill the process group) once ``fd`` goes quiet or hits EOF."""

    def __init__(
        self,
        fd: int,
        timeout: float,
        *,
        fire: Callable[[str], object] | None = None,
        on_data: Callable[[bytes], object] | None = None,
    ) -> None:
        self._fd = fd
        self._timeout = timeout
        self._fire = fire or kill_process_group
        self._on_data = on_data
        self._thread = threading.Thread(target=self._watch, name="steward-deadman", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._fd, _POLL_EVENTS)
        last_beat = clock.now()
        while True:
            # Checked after every wait, before reading: a heartbeat that arrives once the
            # deadline has passed (the host was suspended, or this thread could not run) does
            # not revive the attempt, whose lease may be gone by now.
            remaining = last_beat + self._timeout - clock.now()
            if remaining <= 0:
                self._fire(f"no heartbeat on stdin for {self._timeout:g}s")
                return
            # In slices: poll's timeout stops during a suspend, the safety clock does not.
            if not poller.poll(_millis(clock.slice_of(remaining))):
                continue
            if last_beat + self._timeout <= clock.now():
                continue  # fires at the top of the loop
            try:
                chunk = os.read(self._fd, 4096)
            except OSError as exc:
                self._fire(f"stdin unreadable ({exc})")
                return
            if not chunk:
                self._fire("stdin closed by the parent")
                return
            last_beat = clock.now()
            if self._on_data is not None:
                self._on_data(chunk)


class LaunchLineCollector:
    """Finds a warm spare's launch document in what its dead-man's switch reads.

    A spare's stdin carries heartbeats (empty lines) from the start, so one thread (the
    switch's) reads it all and hands each chunk here; the first non-empty line is the launch
    document and everything after it only counts as heartbeats.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._line: bytes | None = None
        self._error: str | None = None
        self._done = threading.Event()

    def feed(self, chunk: bytes) -> None:
        if self._done.is_set():
            return
        self._buffer += chunk
        self._buffer[:] = self._buffer.lstrip(b"\r\n")
        newline = self._buffer.find(b"\n")
        if newline >= 0:
            self._line = bytes(self._buffer[:newline])
            self._buffer.clear()
            self._done.set()
        elif len(self._buffer) > MAX_LAUNCH_LINE:
            self._error = f"launch document longer than {MAX_LAUNCH_LINE} bytes"
            self._buffer.clear()
            self._done.set()

    def wait(self, timeout: float | None = None) -> bytes:
        """The launch line; LaunchError if it is too long or not there within ``timeout``."""
        if not self._done.wait(timeout):
            raise LaunchError(f"no launch document on stdin within {timeout:g}s")
        if self._line is None:
            raise LaunchError(self._error or "no launch document")
        return self._line


def kill_process_group(reason: str) -> NoReturn:
    """SIGKILL every process of the attempt, then this one; never returns."""
    pgid = os.getpgrp()
    # os.write, not logging: the main thread may hold a logging lock while it is stuck. On a
    # thread, waited for briefly: fd 2 is a pipe to the log capper, which may be frozen with
    # the pipe full, and the switch must fire all the same.
    message = f"steward runner: dead-man's switch: {reason}; killing group {pgid}\n".encode()
    writer = threading.Thread(target=_write_quietly, args=(2, message), daemon=True)
    writer.start()
    writer.join(_LAST_WORDS_WAIT)
    cgroup = containment.own_cgroup()
    reaping.kill_all(lambda: _attempt_processes(cgroup), exclude=[os.getpid()])
    if cgroup is not None:
        cgroup.kill()  # this process included
    os.killpg(pgid, signal.SIGKILL)
    os._exit(128 + signal.SIGKILL)  # not reached: the group kill includes this process


def _write_quietly(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, data)


def kill_leftovers() -> list[int]:
    """SIGKILL every other process of the attempt; return their pids.

    Runs as an attempt ends normally: the TaskManager frees the execution lease only when
    every process of the attempt is gone, so a subprocess the pipeline forgot, or one that
    escaped into a session of its own, must not keep it.
    """
    cgroup = containment.own_cgroup()
    killed = reaping.kill_all(lambda: _attempt_processes(cgroup), exclude=[os.getpid()])
    reaping.reap_children()  # orphans re-parented to us: no zombies left for init
    return killed


def _attempt_processes(cgroup: containment.Cgroup | None) -> list[psutil.Process]:
    """This runner's descendants, process group and cgroup members (this process included)."""
    found = {process.pid: process for process in reaping.descendants(os.getpid())}
    found.update((p.pid, p) for p in reaping.group_members(os.getpgrp()))
    if cgroup is not None:
        for pid in cgroup.pids():
            with contextlib.suppress(psutil.Error):
                found.setdefault(pid, psutil.Process(pid))
    return reaping.live(found.values())


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000) + 1)
