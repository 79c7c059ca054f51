"""Warm spare runners: runner processes whose SparkSession is already up, waiting for an attempt.

A cold attempt spends most of its start in the JVM: starting it, building the SparkContext,
loading and JIT-compiling the classes of a first job (about 9 s here). A TaskManager with
``taskmanager.spark.prewarm-runners`` > 0 keeps that many spares (never more than its free
slots) started with ``--prewarm`` (see "Warm runners" in :mod:`steward.wire.runner_protocol`).

- A spare is not an attempt: it holds no slot and no lease, runs no user code and writes
  nothing but its log. Its dead-man's switch is armed from the start, so it dies with the
  TaskManager exactly like an attempt (rule 4).
- :meth:`SparePool.take` is called by the TaskManager *after* the attempt's lease is taken,
  where a cold runner would be spawned (rule 3 unchanged): it hands out a ready spare
  if the job can use one (:func:`steward.wire.warm.cold_reason`), else None (cold runner).
  Each spare serves one attempt, then dies with it: attempts stay isolated processes. Its
  replacement starts :data:`REPLACE_DELAY` later, not to compete with the attempt's start.
- A maintainer thread keeps the pool at its target: replaces spares taken or dead, kills
  spares beyond the free slots, and backs off (up to a minute) when spares keep dying before
  they are ready (no Java, a broken master), instead of spinning.
- Each spare's folder (``spare-<n>/``, where its JVM keeps working after a handover) is handed
  to ``on_folder_done`` once no process of the spare is left, for removal after the
  retention (:mod:`steward.taskmanager.workdir_cleaner`); its log is capped like an
  attempt's, and the cap covers the warm-up lines and the attempt it serves together.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from steward.sparkconf.session_settings import CONF_FOLDER, export
from steward.supervisor.process_group import SpawnError
from steward.supervisor.runner_process import RunnerProcess
from steward.taskmanager.scratch import scratch_dir, with_scratch
from steward.wire.warm import cold_reason

log = logging.getLogger(__name__)

_CHECK_INTERVAL = 0.5
REPLACE_DELAY = 3.0
"""Seconds between a handover and its replacement's start: a JVM starting takes a core or
two for seconds, which the attempt that just started needs for its own first jobs."""
_MAX_BACKOFF = 60.0
_STOP_WAIT = 10.0


class SparePool:
    """At most ``limit`` warm spares, and never more than ``free_slots()``."""

    def __init__(
        self,
        *,
        limit: int,
        spark_master: str,
        deadman_timeout: float,
        folder: Path,
        free_slots: Callable[[], int],
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        replace_delay: float = REPLACE_DELAY,
        log_max_size: int | None = None,
        on_folder_done: Callable[[Path], None] | None = None,
        spark_defaults: Mapping[str, str] | None = None,
    ) -> None:
        """``on_folder_done(folder)``: a spare's folder no process of it uses any more (the
        spare died, or the attempt it was handed to is gone); the caller removes it."""
        self.limit = limit
        self._log_max_size = log_max_size
        self._on_folder_done = on_folder_done
        self._folders: dict[RunnerProcess, Path] = {}
        """Every spare's own folder, until its process group is gone (handed-out ones too)."""
        self._replace_delay = replace_delay
        self.spark_master = spark_master
        self._deadman_timeout = deadman_timeout
        self._folder = folder
        self._free_slots = free_slots
        self._env = env
        self._spark_defaults = dict(spark_defaults or {})
        """Spark settings a cold runner gets from its launch document (the event log): the
        spares' JVMs start with them too, so a spare's run is a cold one's."""
        self._python = python
        self._lock = threading.Lock()
        self._spares: list[RunnerProcess] = []
        self._serial = 0
        self._failures = 0
        self._not_before = 0.0
        self._stopped = False
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._maintain, name="spare-runners", daemon=True)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> SparePool:
        # Leftovers of an earlier TaskManager with this id (its spares died with it).
        shutil.rmtree(self._folder, ignore_errors=True)
        self._folder.mkdir(parents=True, exist_ok=True)
        if self._spark_defaults:
            env = dict(os.environ if self._env is None else self._env)
            export(self._spark_defaults, self._folder / CONF_FOLDER, env)
            self._env = env
        self._thread.start()
        return self

    def stop(self) -> None:
        """Kill every spare not handed out and wait until their process groups are gone."""
        with self._lock:
            self._stopped = True
            spares, self._spares = self._spares, []
        self._wake.set()
        for spare in spares:
            spare.kill()
        for spare in spares:
            if not spare.wait_gone(_STOP_WAIT):
                log.error("spare runner survived SIGKILL pid=%s", spare.pid)
            spare.close()
        if self._thread.is_alive():
            self._thread.join(timeout=_STOP_WAIT)
        shutil.rmtree(self._folder, ignore_errors=True)

    def wake(self) -> None:
        """Reconcile now (an attempt ended, a spare was taken)."""
        self._wake.set()

    # ------------------------------------------------------------------ queries

    def spares(self) -> list[RunnerProcess]:
        with self._lock:
            return list(self._spares)

    def ready_pids(self) -> list[int]:
        """Pids of the spares that are warm and alive, for status and tests."""
        return [s.pid for s in self.spares() if _usable(s) and s.pid is not None]

    # ------------------------------------------------------------------ handing out

    def take(self, spark_conf: Mapping[str, str], job_master: str) -> RunnerProcess | None:
        """A ready spare for a job with ``spark_conf`` on ``job_master``, or None (go cold).

        The spare leaves the pool: the caller assigns it its attempt or kills it, then calls
        :meth:`wake` so its replacement starts warming.
        """
        reason = cold_reason(spark_conf, job_master, self.spark_master)
        if reason is None:
            with self._lock:
                spare = next((s for s in self._spares if _usable(s)), None)
                if spare is not None:
                    self._spares.remove(spare)
                    later = time.monotonic() + self._replace_delay
                    self._not_before = max(self._not_before, later)
            if spare is None:
                reason = "no warm spare is ready"
            else:
                log.info("warm spare handed out pid=%s", spare.pid)
                return spare
        log.info("cold runner: %s", reason)
        return None

    # ------------------------------------------------------------------ maintaining

    def _maintain(self) -> None:
        while not self._stopped:
            try:
                self.reconcile()
            except Exception:
                log.exception("spare maintenance failed; retrying")
            self._wake.wait(_CHECK_INTERVAL)
            self._wake.clear()

    def reconcile(self) -> None:
        """One pass: drop dead spares, kill extra ones, start missing ones."""
        with self._lock:
            if self._stopped:
                return
            self._drop_dead()
            self._release_folders()
            target = max(0, min(self.limit, self._free_slots()))
            while len(self._spares) > target:
                # The newest first: the oldest is the likeliest to be warm already.
                extra = self._spares.pop()
                log.info("spare runner beyond the free slots killed pid=%s", extra.pid)
                extra.kill()
            missing = target - len(self._spares)
            if missing > 0 and time.monotonic() >= self._not_before:
                for _ in range(missing):
                    self._spawn()

    def _drop_dead(self) -> None:
        for spare in list(self._spares):
            if spare.ready is None and spare.final is not None:
                spare.kill()  # it could not warm: its JVM may still be on its way out
            elif spare.group.alive():
                if spare.ready is not None:
                    self._failures = 0
                continue
            if spare.ready is None:
                self._failures += 1
                delay = min(_MAX_BACKOFF, 2.0 ** (self._failures - 1))
                self._not_before = time.monotonic() + delay
                log.warning(
                    "spare runner died before it was warm pid=%s failures=%d next_try_in=%.0fs"
                    " (see %s)",
                    spare.pid,
                    self._failures,
                    delay,
                    spare.log_path,
                )
            else:
                log.warning("warm spare runner died pid=%s (see %s)", spare.pid, spare.log_path)
            self._spares.remove(spare)
            spare.close()

    def _release_folders(self) -> None:
        # Handed-out spares included: the attempt's JVM keeps its working directory here.
        for spare, folder in list(self._folders.items()):
            if spare in self._spares and not self._stopped:
                continue  # in the pool: _drop_dead decides
            with contextlib.suppress(RuntimeError):
                if spare.group.alive():
                    continue
            del self._folders[spare]
            if self._on_folder_done is not None:
                self._on_folder_done(folder)

    def _spawn(self) -> None:
        self._serial += 1
        folder = self._folder / f"spare-{self._serial}"
        # Its JVM's scratch, and later its attempt's: it goes when the spare's processes do.
        scratch = scratch_dir(folder)
        scratch.mkdir(parents=True, exist_ok=True)
        spare = RunnerProcess.spare(
            spark_master=self.spark_master,
            deadman_timeout=self._deadman_timeout,
            cwd=folder,
            log_path=folder / "runner.log",
            env=with_scratch(self._env, scratch),
            python=self._python,
            log_max_size=self._log_max_size,
        )
        self._folders[spare] = folder
        try:
            spare.spawn()
        except SpawnError as exc:
            self._failures += 1
            self._not_before = time.monotonic() + min(_MAX_BACKOFF, 2.0**self._failures)
            log.error("could not start a spare runner: %s", exc)
            return
        log.info("spare runner warming pid=%s master=%s", spare.pid, self.spark_master)
        self._spares.append(spare)


def _usable(spare: RunnerProcess) -> bool:
    with contextlib.suppress(RuntimeError):
        return spare.ready is not None and spare.final is None and spare.group.alive()
    return False
