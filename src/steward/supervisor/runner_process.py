"""The parent's side of the runner protocol: start one runner process and drive it to its end.

:class:`RunnerProcess` is what a TaskManager (and a JobManager running an ``initialize`` hook)
uses instead of talking to the pipe by hand. It follows :mod:`steward.wire.runner_protocol`:

- :meth:`RunnerProcess.spawn` creates the events pipe, starts ``runner_command(fd)`` as the
  leader of a new process group (stdin a pipe, stdout/stderr to the log file, cwd the
  attempt's folder, ``pass_fds=(fd,)``), closes the parent's copy of the write end (EOF on the
  read end then means every writer is gone) and reads its events on a thread
  (:class:`~steward.supervisor.runner_events.RunnerEvents`), handing each to ``on_event``;
- :meth:`RunnerProcess.begin` writes the launch document and starts feeding the dead-man's
  switch a byte every ``deadman_timeout / 3`` from a thread;
- :meth:`RunnerProcess.outcome` is the runner's final event or, when it exited without one,
  :func:`steward.wire.heartbeat.lost_outcome` ("runner exited with code C without a final event");
- :meth:`RunnerProcess.cancel` SIGTERMs the runner's pid only (the pipeline gets
  ``AttemptCancelled``; the Spark JVM is left to the runner) and SIGKILLs the whole group
  after a grace period.

A *spare* (:meth:`RunnerProcess.spare`) is a runner started before its attempt is known: it
is spawned with ``--prewarm``, fed heartbeats at once, warms a SparkSession and reports
``ready``; :meth:`RunnerProcess.assign` later gives it its attempt (launch document, log,
event callback) and :meth:`RunnerProcess.begin` sends the document, exactly where a cold
runner would have been spawned.

``spawn`` and ``begin`` are separate so a TaskManager can spawn inside
:meth:`steward.taskmanager.execution.Executions.start_with`, after the execution lease is
taken (rule 3); :meth:`RunnerProcess.start` does both for callers without a lease.
:func:`steward.supervisor.completion.run_to_completion` runs one runner to its end with a
deadline (the leader's way of running a job's ``initialize`` hook outside its own process,
rule 6).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Mapping
from pathlib import Path

from steward.supervisor.os_user import OsUser
from steward.supervisor.process_group import ProcessGroup
from steward.supervisor.runner_events import OnEvent, RunnerEvents
from steward.wire.heartbeat import lost_outcome
from steward.wire.runner_protocol import (
    FinalEvent,
    LaunchDocument,
    ReadyEvent,
    runner_command,
    spare_command,
)

log = logging.getLogger(__name__)

HEARTBEAT_BYTE = b"\n"
_EVENTS_DRAIN_TIMEOUT = 5.0
KILL_WAIT = 10.0
"""How long a SIGKILLed runner's group may take to be gone before that is logged as an error."""


def runner_env(job_env: Mapping[str, str]) -> dict[str, str] | None:
    """A runner's environment: this process's, with the job's ``env`` over it (None: this
    process's as it is). Set at the spawn, so the Spark JVM and whatever else the runner
    starts inherit it."""
    return {**os.environ, **job_env} if job_env else None


class RunnerProcess:
    """One runner process: its process group, its events and its dead-man's switch feed."""

    def __init__(
        self,
        launch: LaunchDocument | None,
        *,
        cwd: Path,
        log_path: Path,
        on_event: OnEvent | None = None,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        heartbeat_interval: float | None = None,
        spare_of: tuple[str, float] | None = None,
        log_max_size: int | None = None,
        user: OsUser | None = None,
    ) -> None:
        """``launch`` is None only for a spare, whose ``spare_of`` is (master, deadman).

        ``log_max_size``: cap the log at that many bytes (:mod:`steward.supervisor.logcap`);
        ``user``: the OS user the runner runs as (None: this process's).
        """
        if (launch is None) == (spare_of is None):
            raise ValueError("a runner has a launch document, or is a spare; not both")
        self.launch = launch
        self.cwd = cwd
        self.log_path = log_path
        self._env = env
        self._python = python
        self._spare_of = spare_of
        self._log_max_size = log_max_size
        self.user = user
        if launch is not None:
            deadman = launch.deadman_timeout
        else:
            assert spare_of is not None
            deadman = spare_of[1]
        self.heartbeat_interval = (
            heartbeat_interval if heartbeat_interval is not None else deadman / 3
        )
        self._group: ProcessGroup | None = None
        self._feeding = threading.Event()
        self._stdin_lock = threading.Lock()
        self._feeder: threading.Thread | None = None
        self._kill_timer: threading.Timer | None = None
        name = f"{launch.job_id}-{launch.attempt}" if launch is not None else "spare"
        self._events = RunnerEvents(name, on_event)

    @classmethod
    def spare(
        cls,
        *,
        spark_master: str,
        deadman_timeout: float,
        cwd: Path,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        log_max_size: int | None = None,
    ) -> RunnerProcess:
        """A warm spare, not yet spawned: :meth:`spawn` it, then :meth:`assign` an attempt."""
        return cls(
            None,
            cwd=cwd,
            log_path=log_path,
            env=env,
            python=python,
            spare_of=(spark_master, deadman_timeout),
            log_max_size=log_max_size,
        )

    # ------------------------------------------------------------------ starting

    def spawn(self) -> ProcessGroup:
        """Start the runner process and read its events; raises :class:`SpawnError`."""
        if self._group is not None:
            raise RuntimeError("runner already spawned")
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        read_end, write_end = os.pipe()
        if self._spare_of is not None:
            master, deadman = self._spare_of
            argv = spare_command(
                write_end, spark_master=master, deadman_timeout=deadman, python=self._python
            )
        else:
            argv = runner_command(write_end, self._python)
        try:
            group = ProcessGroup.spawn(
                argv,
                cwd=self.cwd,
                env=self._env,
                log_path=self.log_path,
                pass_fds=(write_end,),
                log_max_size=self._log_max_size,
                user=self.user,
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._group = group
        self._events.read(read_end, on_close=self._feeding.clear)
        if self._spare_of is not None:
            self._start_feeding()  # a spare's switch is armed at once: feed it from now
        return group

    def assign(self, launch: LaunchDocument, *, log_path: Path, on_event: OnEvent | None) -> None:
        """Make this spare the runner of ``launch``, working in ``log_path``'s folder (the
        runner moves there when the document arrives); call :meth:`begin` next.

        The spare's log file is renamed to ``log_path``: the runner and its JVM keep writing
        to the same open file, now the attempt's log.
        """
        if self._spare_of is None or self.launch is not None:
            raise RuntimeError("only an unassigned spare can be assigned an attempt")
        workdir = log_path.parent
        os.replace(self.log_path, log_path)
        self.launch = launch.model_copy(update={"workdir": str(workdir)})
        self.cwd, self.log_path = workdir, log_path
        self._events.name = f"{launch.job_id}-{launch.attempt}"
        self._events.on_event = on_event

    def begin(self) -> None:
        """Send the launch document and start feeding the dead-man's switch."""
        if self.launch is None:
            raise RuntimeError("a spare needs an attempt (assign) before begin")
        if not self._write(self.launch.to_json() + b"\n"):
            log.warning("could not send the launch document job=%s", self._events.name)
            return
        self._start_feeding()

    def _start_feeding(self) -> None:
        self._feeding.set()
        if self._feeder is None:
            self._feeder = threading.Thread(
                target=self._feed, name=f"{self._events.name}-feed", daemon=True
            )
            self._feeder.start()

    def start(self) -> RunnerProcess:
        """:meth:`spawn` then :meth:`begin`, for a caller that holds no execution lease."""
        self.spawn()
        self.begin()
        return self

    # ------------------------------------------------------------------ observing

    @property
    def group(self) -> ProcessGroup:
        if self._group is None:
            raise RuntimeError("runner not spawned yet")
        return self._group

    @property
    def pid(self) -> int | None:
        return self._group.pid if self._group is not None else None

    @property
    def is_spare(self) -> bool:
        """Started as a spare (assigned or not)."""
        return self._spare_of is not None

    @property
    def spare_master(self) -> str | None:
        return self._spare_of[0] if self._spare_of is not None else None

    @property
    def assigned(self) -> bool:
        return self.launch is not None

    @property
    def ready(self) -> ReadyEvent | None:
        """A spare's ``ready`` event, once its SparkSession is warm."""
        return self._events.ready

    def wait_ready(self, timeout: float) -> bool:
        return self._events.wait_ready(timeout)

    @property
    def final(self) -> FinalEvent | None:
        """The runner's final event, once it arrived."""
        return self._events.final

    @property
    def events_closed(self) -> bool:
        """Every writer of the events pipe is gone and every event was handed on."""
        return self._events.closed.is_set()

    def wait_events_closed(self, timeout: float) -> bool:
        return self._events.closed.wait(timeout)

    def outcome(self, returncode: int | None = None) -> FinalEvent:
        """The final event, or the failed event that stands for a missing one.

        Call once the runner has exited; waits (a few seconds at most) for the pipe to drain.
        """
        self.wait_events_closed(_EVENTS_DRAIN_TIMEOUT)
        if self._events.final is not None:
            return self._events.final
        if returncode is None and self._group is not None:
            returncode = self._group.wait_exit(_EVENTS_DRAIN_TIMEOUT)
        return lost_outcome(f"runner exited with code {returncode} without a final event")

    # ------------------------------------------------------------------ feeding

    def stop_feeding(self) -> None:
        """Stop the heartbeats while leaving stdin open (a frozen parent, for tests)."""
        self._feeding.clear()

    def close_stdin(self) -> None:
        """Close the runner's stdin: its dead-man's switch fires at once."""
        self._feeding.clear()
        with self._stdin_lock:
            if self._group is not None:
                self._group.close_stdin()

    def _feed(self) -> None:
        while not self._events.closed.wait(self.heartbeat_interval):
            if not self._feeding.is_set():
                continue
            if not self._write(HEARTBEAT_BYTE):
                return

    def _write(self, data: bytes) -> bool:
        stdin = self._group.stdin if self._group is not None else None
        if stdin is None:
            return False
        with self._stdin_lock:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):  # runner gone (EPIPE) or stdin closed by us
                return False
        return True

    # ------------------------------------------------------------------ ending

    def cancel(self, grace: float) -> None:
        """SIGTERM the runner (a graceful cancel), SIGKILL its group ``grace`` seconds later.

        Returns at once; the group's end is observed as usual (``group.alive()``).
        """
        group = self._group
        if group is None or not group.alive():
            return
        log.info("cancelling runner job=%s pid=%d grace=%.1fs", self._events.name, group.pid, grace)
        if group.returncode is None:
            # The pid only: signalled as a group, the Spark JVM would stop under the pipeline.
            with contextlib.suppress(ProcessLookupError):
                os.kill(group.pid, signal.SIGTERM)
        timer = threading.Timer(grace, self._kill_after_grace)
        timer.name = f"{self._events.name}-cancel"
        timer.daemon = True
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        self._kill_timer = timer
        timer.start()

    def _kill_after_grace(self) -> None:
        if self._group is not None and self._group.alive():
            log.warning("runner outlived its cancel grace; killing job=%s", self._events.name)
            self._group.kill()

    def kill(self) -> None:
        """SIGKILL the whole process group."""
        if self._group is not None:
            self._group.kill()

    def wait_gone(self, timeout: float) -> bool:
        """Wait until the whole process group is gone; False if it still lives."""
        return self._group is None or self._group.wait_gone(timeout)

    def close(self) -> None:
        """Stop feeding and the cancel timer; the process is left as it is (kill it first)."""
        self._feeding.clear()
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        with self._stdin_lock:
            if self._group is not None and not self._group.alive():
                self._group.close_stdin()
