"""One attempt's processes: the runner, its Spark JVM, and everything else they start, whatever
process group or session it ends up in.

The runner is started with ``start_new_session=True``, so it leads a new session and process
group (pgid == its pid). That group alone is not the attempt: PySpark's worker daemon calls
``setpgid(0, 0)``, and user code may start processes in sessions of their own. So each attempt
is also *contained* (:mod:`steward.supervisor.containment`):

- in its own cgroup v2 where the host has a usable one: created before the spawn, the runner
  moved in right after it (and joining again itself before it starts anything); every
  descendant is born inside, the cgroup says when none is left and kills all at once;
- and, everywhere, the runner is the attempt's child subreaper, so orphans stay its
  descendants while it lives; what is left after the runner died is also found by the process
  group and the attempt's token in the environment (:data:`TOKEN_ENV`): without a cgroup
  that is all there is, and with one it covers a child other than the runner that forked
  before the TaskManager moved it in.

"The attempt is gone" (rule 3) means no live process of the attempt is left, not merely
that the runner exited: a Spark JVM or a Python worker that outlives its runner still holds the
job's resources and must keep the lease alive. Once the runner has exited, whatever is left of
the attempt serves no one and is SIGKILLed (:meth:`ProcessGroup.alive`), so the lease is not
held forever by a process nobody will stop.

Signals go to the whole cgroup (``cgroup.kill``) or, without one, to every process found
(:func:`steward.supervisor.reaping.kill_all`, the runner last so that orphans still reach it) and
the group (``killpg``). Linux does not reuse a pid while a process group of that id still has
a member, so signalling the group is safe until we have seen it gone; after that we never
signal it again.

With ``log_max_size`` the attempt's stdout and stderr are a pipe to a log capper
(:mod:`steward.supervisor.logcap`) instead of the log file itself. The capper runs in its own
session and outside the cgroup, so it is no process of the attempt: it never keeps the lease
alive, and no kill of the attempt stops it before it has written the attempt's last output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import psutil

from steward.errors import StewardError
from steward.supervisor import reaping
from steward.supervisor.containment import CGROUP_ENV, TOKEN_ENV, Cgroup
from steward.supervisor.logcap import LogCapper
from steward.supervisor.os_user import OsUser

log = logging.getLogger(__name__)

_POLL_INTERVAL = 0.02


class SpawnError(StewardError):
    """The attempt's process could not be started (bad executable, cwd, permissions)."""


class ProcessGroup:
    """A child process started as the leader of its own process group, and its attempt."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        capper: LogCapper | None = None,
        *,
        token: str | None = None,
        cgroup: Cgroup | None = None,
    ) -> None:
        self._popen = popen
        self.capper = capper
        """The process writing the group's capped log, if any (not a member of the group)."""
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session: the child leads its own group
        self.token = token
        """The attempt's token in the environment of its processes (:data:`TOKEN_ENV`)."""
        self.cgroup = cgroup
        """The attempt's cgroup, or None where the host has no usable cgroup v2."""
        self._leader = _handle(popen.pid)
        self._gone = False
        self._rest_killed = False

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
        user: OsUser | None = None,
    ) -> ProcessGroup:
        """Start ``argv`` in a new process group and a cgroup of its own (where there are
        cgroups); stdout and stderr go to ``log_path``.

        ``stdin`` is a pipe by default: the runner's dead-man's switch (rule 4) is the
        end of that pipe when this process dies. With ``log_max_size`` the log keeps at most
        that many bytes (:mod:`steward.supervisor.logcap`). With ``user`` the process runs as
        that OS user (the log and the capper stay this process's). Raises :class:`SpawnError`.
        """
        token = secrets.token_hex(8)
        cgroup = Cgroup.create(token)
        child_env = dict(env if env is not None else os.environ)
        child_env[TOKEN_ENV] = token
        if cgroup is not None:
            child_env[CGROUP_ENV] = str(cgroup.path)
        try:
            popen, capper = _start(
                argv,
                cwd=cwd,
                env=child_env,
                stdin=stdin,
                log_path=log_path,
                pass_fds=pass_fds,
                log_max_size=log_max_size,
                user=user,
            )
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        if cgroup is not None and not cgroup.add(popen.pid):
            cgroup = None  # the runner's own join fails alike: the fallback finds its processes
        log.info(
            "spawned pid=%d pgid=%d argv0=%s cgroup=%s log_capper=%s",
            popen.pid,
            popen.pid,
            argv[0],
            cgroup.path if cgroup is not None else None,
            capper.pid if capper is not None else None,
        )
        return cls(popen, capper, token=token, cgroup=cgroup)

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

    def log_dropped(self) -> int | None:
        """Bytes its log capper dropped in all (0 without a capper), once the capper has
        drained the attempt's output and exited; None while it still runs."""
        return 0 if self.capper is None else self.capper.dropped()

    def alive(self) -> bool:
        """True while any live process of the attempt exists, whatever its group or session.

        Once the runner has exited, the rest of the attempt is SIGKILLed (on each call until it
        is gone): nothing would ever stop it otherwise, and the lease waits for it.
        """
        if self.capper is not None:
            self.capper.poll()  # reap it once it is done: no zombie per attempt
        if self._gone:
            self._remove_cgroup()
            return False
        # Reap our direct child: an unreaped zombie would keep the group "existing" forever.
        if self._popen.poll() is None:
            # The leader itself lives (or another thread is reaping it right now): alive, and
            # no need for the scans below on each monitor pass.
            return True
        if not self._rest_alive():
            return self._mark_gone()
        if not self._rest_killed:
            self._rest_killed = True
            log.warning(
                "runner gone, killing the rest of its attempt pid=%d returncode=%s cgroup=%s",
                self.pid,
                self._popen.returncode,
                self.cgroup,
            )
        # On every pass until it is gone: without a cgroup, a process that forks faster than
        # a scan of /proc can outrun one kill.
        self._kill()
        return True

    def _rest_alive(self) -> bool:
        # The group and the token too: a child that is not the runner may fork before it was
        # moved into the cgroup (the runner joins it itself before it starts anything).
        cgroup = self.cgroup  # read once: another thread may remove it meanwhile
        if cgroup is not None and cgroup.populated():
            return True
        return self._group_alive() or bool(self.token and reaping.marked(self.token))

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # a member exists but changed its credentials: it is alive
        # killpg also succeeds for zombies left unreaped by a non-reaping init (containers).
        return bool(reaping.group_members(self.pgid))

    def _mark_gone(self) -> bool:
        if not self._gone:
            log.info("process group gone pgid=%d returncode=%s", self.pgid, self._popen.poll())
        self._gone = True
        self._remove_cgroup()
        return False

    def _remove_cgroup(self) -> None:
        cgroup = self.cgroup
        if cgroup is not None and cgroup.remove():
            self.cgroup = None

    def _signal(self, signum: signal.Signals) -> None:
        if self._gone:
            return  # the pgid may belong to someone else by now
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signum)

    def kill(self) -> None:
        """SIGKILL every process of the attempt: its cgroup or what the fallback finds, then
        its process group (the runner)."""
        if self._gone:
            return
        log.info("killing attempt pgid=%d cgroup=%s", self.pgid, self.cgroup)
        self._kill()

    def _kill(self) -> None:
        cgroup = self.cgroup  # read once: another thread may remove it meanwhile
        if cgroup is not None:
            cgroup.kill()
        # The runner last: while it lives, the orphans of what is killed go to it.
        reaping.kill_all(self._fallback_members, exclude=[self.pid])
        self._signal(signal.SIGKILL)

    def _fallback_members(self) -> list[psutil.Process]:
        found = {p.pid: p for p in reaping.group_members(self.pgid)}
        if self._leader is not None and self._popen.poll() is None:
            with contextlib.suppress(psutil.Error):
                if self._leader.is_running():  # not a reused pid
                    found.update((p.pid, p) for p in reaping.descendants(self.pid))
        if self.token:
            found.update((p.pid, p) for p in reaping.marked(self.token))
        return list(found.values())

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


def _start(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    stdin: int | None,
    log_path: str | os.PathLike[str] | None,
    pass_fds: Sequence[int],
    log_max_size: int | None,
    user: OsUser | None = None,
) -> tuple[subprocess.Popen[bytes], LogCapper | None]:
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
                env=dict(env),
                stdin=stdin,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                **(user.popen_arguments() if user is not None else {}),
            )
    except OSError as exc:
        if capper is not None:  # its pipe's write end is closed: it exits at once
            with contextlib.suppress(subprocess.TimeoutExpired):
                capper.process.wait(timeout=5)
        raise SpawnError(f"could not start {argv[0] if argv else '?'!r}: {exc}") from exc
    return popen, capper


def _handle(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None
