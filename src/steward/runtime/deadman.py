"""The runner's lifeline to its TaskManager: stdin, the dead-man's switch, the process group.

Owns fd 0 of the runner: :func:`read_launch_line` takes the launch document off it,
:func:`detach_stdin` moves the pipe out of the pipeline's reach, and :class:`DeadmanSwitch`
watches it from a daemon thread. When the parent stops writing (EOF, or silence for
``timeout`` seconds) the switch SIGKILLs the runner's whole process group, which holds the
Spark JVM and whatever else the pipeline started, so an attempt can never outlive a dead or
frozen TaskManager by more than ``timeout`` (DESIGN rule 4).

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

from steward.runtime.protocol import LaunchError

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
    """Lead a process group (the TaskManager's start_new_session already makes it so).

    Killing "our" group must never reach the shell or test runner that started us by hand.
    """
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)
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
        last_beat = time.monotonic()
        while True:
            remaining = last_beat + self._timeout - time.monotonic()
            if remaining <= 0:
                self._fire(f"no heartbeat on stdin for {self._timeout:g}s")
                return
            if not poller.poll(_millis(remaining)):
                continue
            try:
                chunk = os.read(self._fd, 4096)
            except OSError as exc:
                self._fire(f"stdin unreadable ({exc})")
                return
            if not chunk:
                self._fire("stdin closed by the parent")
                return
            last_beat = time.monotonic()
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
    """SIGKILL this process group and every descendant that left it; never returns."""
    pgid = os.getpgrp()
    # os.write, not logging: the main thread may hold a logging lock while it is stuck. On a
    # thread, waited for briefly: fd 2 is a pipe to the log capper, which may be frozen with
    # the pipe full, and the switch must fire all the same.
    message = f"steward runner: dead-man's switch: {reason}; killing group {pgid}\n".encode()
    writer = threading.Thread(target=_write_quietly, args=(2, message), daemon=True)
    writer.start()
    writer.join(_LAST_WORDS_WAIT)
    for process in _descendants():
        with contextlib.suppress(OSError):
            if os.getpgid(process.pid) != pgid:
                os.kill(process.pid, signal.SIGKILL)
    os.killpg(pgid, signal.SIGKILL)
    os._exit(128 + signal.SIGKILL)  # not reached: the group kill includes this process


def _write_quietly(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, data)


def kill_leftovers() -> list[int]:
    """SIGKILL every other process of this group and every descendant; return their pids.

    Runs as an attempt ends normally: the TaskManager frees the execution lease only when
    the whole group is gone, so a subprocess the pipeline forgot must not keep it.
    """
    me, pgid = os.getpid(), os.getpgrp()
    victims = {process.pid for process in _descendants()}
    for process in psutil.process_iter():
        with contextlib.suppress(OSError):
            if os.getpgid(process.pid) == pgid:
                victims.add(process.pid)
    victims.discard(me)
    killed = []
    for pid in sorted(victims):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _descendants() -> list[psutil.Process]:
    try:
        return list(psutil.Process().children(recursive=True))
    except psutil.Error:
        return []


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000) + 1)
