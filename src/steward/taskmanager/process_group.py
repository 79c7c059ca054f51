"""One attempt's processes as one POSIX process group: the runner, its Spark JVM, and anything
else they start.

The child is started with ``start_new_session=True``, so it leads a new session and process
group (pgid == its pid) that every descendant inherits. "The attempt is gone" (DESIGN rule 3)
means no live process of that group is left, not merely that the runner exited: a Spark JVM
that outlives its runner still holds the job's resources and must keep the lease alive.

Signals go to the whole group (``killpg``). Linux does not reuse a pid while a process group
of that id still has a member, so signalling the group is safe until we have seen it gone;
after that we never signal it again. A descendant that calls ``setsid()`` leaves the group and
is beyond our reach (Spark does not).

With ``log_max_size`` the group's stdout and stderr are a pipe to a log capper
(:mod:`steward.runtime.logcap`) instead of the log file itself. The capper runs in its own
session, so it is no member of the group: it never keeps the group (and the lease) alive, and
no kill of the group stops it before it has written the group's last output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import psutil

from steward.errors import StewardError
from steward.runtime.logcap import LogCapper

log = logging.getLogger(__name__)

_POLL_INTERVAL = 0.02


class SpawnError(StewardError):
    """The attempt's process could not be started (bad executable, cwd, permissions)."""


class ProcessGroup:
    """A child process started as the leader of its own process group."""

    def __init__(self, popen: subprocess.Popen[bytes], capper: LogCapper | None = None) -> None:
        self._popen = popen
        self.capper = capper
        """The process writing the group's capped log, if any (not a member of the group)."""
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session: the child leads its own group
        self._gone = False

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.PIPE,
        log_path: str | os.PathLike[str] | None = None,
        pass_fds: Sequence[int] = (),
        log_max_size: int | None = None,
    ) -> ProcessGroup:
        """Start ``argv`` in a new process group; stdout and stderr go to ``log_path``.

        ``stdin`` is a pipe by default: the runner's dead-man's switch (DESIGN rule 4) is the
        end of that pipe when this process dies. With ``log_max_size`` the log keeps at most
        that many bytes (:mod:`steward.runtime.logcap`). Raises :class:`SpawnError`.
        """
        capper: LogCapper | None = None
        try:
            with contextlib.ExitStack() as stack:
                out: int | IO[bytes]
                if log_path is None:
                    out = subprocess.DEVNULL
                elif log_max_size:
                    capper = LogCapper.start(Path(log_path), log_max_size)
                    stack.callback(capper.close_write_end)
                    assert capper.write_fd is not None
                    out = capper.write_fd
                else:
                    out = stack.enter_context(Path(log_path).open("ab"))
                popen = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=dict(env) if env is not None else None,
                    stdin=stdin,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    pass_fds=tuple(pass_fds),
                    start_new_session=True,
                )
        except OSError as exc:
            if capper is not None:  # its pipe's write end is closed: it exits at once
                with contextlib.suppress(subprocess.TimeoutExpired):
                    capper.process.wait(timeout=5)
            raise SpawnError(f"could not start {argv[0] if argv else '?'!r}: {exc}") from exc
        log.info(
            "spawned pid=%d pgid=%d argv0=%s log_capper=%s",
            popen.pid,
            popen.pid,
            argv[0],
            capper.pid if capper is not None else None,
        )
        return cls(popen, capper)

    @property
    def stdin(self) -> IO[bytes] | None:
        """The write end of the child's stdin pipe (None unless spawned with a pipe)."""
        return self._popen.stdin

    @property
    def returncode(self) -> int | None:
        """The direct child's exit status (negative: killed by that signal); None while it runs."""
        return self._popen.poll()

    def wait_exit(self, timeout: float) -> int | None:
        """Wait for the direct child to exit and be reaped; its returncode, None if it runs.

        A group can look gone a moment before its leader is reapable (a multi-threaded process
        shows as a zombie while its other threads are still being torn down).
        """
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def alive(self) -> bool:
        """True while any non-zombie process of the group exists, grandchildren included."""
        if self.capper is not None:
            self.capper.poll()  # reap it once it is done: no zombie per attempt
        if self._gone:
            return False
        # Reap our direct child: an unreaped zombie would keep the group "existing" forever.
        if self._popen.poll() is None:
            # The leader itself lives (or another thread is reaping it right now): alive, and
            # no need for the scan of every process below on each monitor pass.
            return True
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return self._mark_gone()
        except PermissionError:
            pass  # a member exists but changed its credentials: it is alive
        # killpg also succeeds for zombies left unreaped by a non-reaping init (containers).
        if self._any_live_member():
            return True
        return self._mark_gone()

    def _any_live_member(self) -> bool:
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == self.pgid and proc.status() != psutil.STATUS_ZOMBIE:
                    return True
            except (ProcessLookupError, psutil.Error):
                continue
        return False

    def _mark_gone(self) -> bool:
        if not self._gone:
            log.info("process group gone pgid=%d returncode=%s", self.pgid, self._popen.poll())
        self._gone = True
        return False

    def _signal(self, signum: signal.Signals) -> None:
        if self._gone:
            return  # the pgid may belong to someone else by now
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signum)

    def kill(self) -> None:
        """SIGKILL every process of the group."""
        log.info("killing process group pgid=%d", self.pgid)
        self._signal(signal.SIGKILL)

    def terminate(self, grace: float) -> bool:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds; True once it is gone."""
        log.info("terminating process group pgid=%d grace=%.1fs", self.pgid, grace)
        self._signal(signal.SIGTERM)
        if self.wait_gone(grace):
            return True
        self.kill()
        return self.wait_gone(5.0)

    def wait_gone(self, timeout: float) -> bool:
        """Wait until the whole group is gone; False if it still lives after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.alive():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(_POLL_INTERVAL, remaining))
        return True

    def close_stdin(self) -> None:
        """Close our end of the child's stdin (the runner reads EOF: its dead-man's switch)."""
        if self._popen.stdin is not None:
            with contextlib.suppress(OSError):
                self._popen.stdin.close()
