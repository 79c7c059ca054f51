"""Running jobs' ``initialize(ctx)`` hooks: in child processes of the leader, never inside it.

rule 6: user code never runs inside a JobManager. The hook of a job runs in a runner
process (mode INITIALIZE) with a timeout, on a bounded pool of threads so that a leader
recovering many jobs runs a few hooks at a time. A pipeline whose sources cannot define an
``initialize`` function skips the child process entirely (recovering 1,000 jobs must not
start 1,000 Python processes for nothing).

A hook works in ``<workdir>/<job-id>/initialize-<attempt>/``: its artifact is removed when it
ends, its (capped) ``initialize.log`` stays for ``taskmanager.workdir.retention``, the same
time a TaskManager keeps an attempt's folder. Older hook folders are swept at most once a
minute, after a hook ends; a job whose hook is being prepared or runs is never swept.

A leader cut off from ZooKeeper for ``jobmanager.fence-after`` pauses its hooks through its
liveness probe (:meth:`HookRunner.pause`; docs/architecture.md, "Timing chain"): every
running hook is killed before the session, and with it the leadership, can expire and the
next leader runs the same hooks; no hook starts while paused. When ZooKeeper answers again
and the term goes on, :meth:`HookRunner.resume` runs the interrupted hooks again from the
start (a hook runs again on every recovery anyway); when the term ends, they are dropped.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from steward.artifacts.pipeline import materialize, may_define_initialize
from steward.config import Configuration
from steward.errors import StewardError
from steward.store.blob import BlobRef, BlobStore
from steward.wire.jobs import JobGraph, JobGraphPointer
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent, FinishedEvent, LaunchDocument, RunMode

if TYPE_CHECKING:
    from steward.supervisor.runner_process import RunnerProcess

log = logging.getLogger(__name__)

_SWEEP_EVERY = 60.0
"""Seconds between two sweeps of old hook folders."""


@dataclass(frozen=True)
class _HookWork:
    job_id: str
    pointer: JobGraphPointer
    checkpoint_dir: str
    is_recovery: bool
    attempt: int
    epoch: int


OnDone = Callable[[str, FinishedEvent | FailedEvent], None]


class HookRunner:
    def __init__(
        self, config: Configuration, blobs: BlobStore, workdir: Path, parallelism: int
    ) -> None:
        self._settings = config.settings
        self._blobs = blobs
        self._workdir = workdir
        self._pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="hook")
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()
        self._running: dict[str, RunnerProcess] = {}
        self._active: set[str] = set()
        """Jobs whose hook is being prepared or runs: their folders are not swept."""
        self._swept_at: float | None = None
        self._closed = False
        self._paused: str | None = None
        """Why hooks may not run now (the leader is cut off from ZooKeeper), or None."""
        self._pauses = 0
        self._allowed = threading.Condition(self._lock)

    def submit(
        self,
        job_id: str,
        pointer: JobGraphPointer,
        checkpoint_dir: str,
        *,
        is_recovery: bool,
        attempt: int,
        epoch: int,
        on_done: OnDone,
    ) -> None:
        """Run the job's hook (if it may have one) and call ``on_done(job_id, outcome)``."""
        with self._lock:
            self._cancelled.discard(job_id)
        work = _HookWork(job_id, pointer, checkpoint_dir, is_recovery, attempt, epoch)
        self._pool.submit(self._run, work, on_done)

    def cancel(self, job_id: str) -> None:
        """Forget the job's pending hook and kill its process if it runs."""
        with self._lock:
            self._cancelled.add(job_id)
            runner = self._running.get(job_id)
            self._allowed.notify_all()
        if runner is not None:
            runner.kill()

    def cancel_all(self) -> None:
        """The term ended: kill every hook process, drop the queued ones."""
        with self._lock:
            self._closed = True
            runners = list(self._running.values())
            self._allowed.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for runner in runners:
            runner.kill()

    @property
    def paused(self) -> bool:
        return self._paused is not None

    def pause(self, reason: str) -> None:
        """Kill every running hook and start none until :meth:`resume`; the killed ones run
        again then."""
        with self._lock:
            first = self._paused is None
            self._paused = reason
            self._pauses += 1
            runners = list(self._running.items())
        for job_id, runner in runners:
            log.warning("initialize hook killed job=%s reason=%s", job_id, reason)
            runner.kill()
        if first:
            log.warning("initialize hooks paused running=%d reason=%s", len(runners), reason)

    def resume(self) -> None:
        """ZooKeeper answers again: hooks may run (the interrupted ones again)."""
        with self._lock:
            if self._paused is None:
                return
            self._paused = None
            self._allowed.notify_all()
        log.warning("initialize hooks resumed")

    def _spawned(self, job_id: str, runner: RunnerProcess) -> None:
        with self._lock:
            self._running[job_id] = runner
            doomed = self._closed or job_id in self._cancelled or self._paused is not None
        if doomed:
            runner.kill()

    def _run(self, work: _HookWork, on_done: OnDone) -> None:
        job_id = work.job_id
        with self._lock:
            self._active.add(job_id)
        try:
            outcome = self._run_unless_paused(work)
        finally:
            with self._lock:
                self._active.discard(job_id)
        if outcome is not None:
            on_done(job_id, outcome)
        self.sweep()  # housekeeping, after the job moved on

    def _run_unless_paused(self, work: _HookWork) -> FinishedEvent | FailedEvent | None:
        """The hook's outcome, run again as long as a pause interrupted it; None when the
        job's hook was cancelled, or the term ended while it waited for a resume."""
        while (generation := self._wait_allowed(work.job_id)) is not None:
            try:
                outcome = self._outcome(work)
            except Exception as exc:
                log.exception("initialize hook could not run job=%s", work.job_id)
                error = ErrorInfo(type="steward.InitializeError", message=f"{exc}")
                outcome = FailedEvent(error=error)
            with self._lock:
                if work.job_id in self._cancelled:
                    return None
                if self._closed or self._pauses == generation:
                    return outcome  # a term that ended hears its outcome, as before
            log.warning("initialize hook interrupted by a pause job=%s; runs again", work.job_id)
        return None

    def _wait_allowed(self, job_id: str) -> int | None:
        """Wait while paused; the pause count to compare with after the run, or None when
        the hook must not run any more."""
        with self._lock:
            while self._paused is not None and not self._closed and job_id not in self._cancelled:
                self._allowed.wait()
            if self._closed or job_id in self._cancelled:
                return None
            return self._pauses

    def _outcome(self, work: _HookWork) -> FinishedEvent | FailedEvent:
        job_id, pointer, attempt = work.job_id, work.pointer, work.attempt
        try:
            graph = JobGraph.from_json(self._blobs.get(BlobRef(pointer.blob, pointer.sha256)))
        except StewardError as exc:
            return FailedEvent(
                error=ErrorInfo(
                    type="steward.RecoveryError",
                    message=f"job graph of {job_id!r} is unreadable: {exc}",
                )
            )
        if not may_define_initialize(graph.artifact):
            return FinishedEvent()
        where = self._workdir / job_id / f"initialize-{attempt}"
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        try:
            artifact_path = materialize(graph.artifact, where / "artifact", graph.spec.entrypoint)
            launch = LaunchDocument(
                job_id=job_id,
                attempt=attempt,
                epoch=work.epoch,
                mode=RunMode.INITIALIZE,
                is_recovery=work.is_recovery,
                spec=graph.spec,
                artifact_path=str(artifact_path),
                checkpoint_dir=work.checkpoint_dir,
                spark_master=graph.spec.spark_conf.get("spark.master", self._settings.spark.master),
                deadman_timeout=self._settings.taskmanager.deadman_timeout,
            )
            log.info("initialize hook starting job=%s recovery=%s", job_id, work.is_recovery)
            # Imported here: a JobManager whose jobs define no hook never starts a runner, and
            # the supervisor's psutil costs every start ~0.02 s of CPU.
            from steward.supervisor.completion import run_to_completion
            from steward.supervisor.runner_process import runner_env

            outcome = run_to_completion(
                launch,
                cwd=where,
                log_path=where / "initialize.log",
                timeout=self._settings.jobmanager.initialize_timeout,
                env=runner_env(graph.spec.env),  # the job's code sees its env here too
                on_spawned=lambda runner: self._spawned(job_id, runner),
                # A hook that prints in a loop must not fill the JobManager's disk.
                log_max_size=self._settings.taskmanager.attempt_log_max_size,
            )
        finally:
            with self._lock:
                self._running.pop(job_id, None)
            shutil.rmtree(where / "artifact", ignore_errors=True)
        log.info("initialize hook ended job=%s outcome=%s", job_id, outcome.event)
        return outcome

    def sweep(self, *, force: bool = False) -> list[Path]:
        """Remove hook folders older than the retention (at most once a minute unless
        ``force``); returns those removed. A failure is logged, never raised."""
        now = time.time()
        with self._lock:
            if not force and self._swept_at is not None and now - self._swept_at < _SWEEP_EVERY:
                return []
            self._swept_at = now
        retention = self._settings.taskmanager.workdir_retention
        removed: list[Path] = []
        with contextlib.suppress(FileNotFoundError):
            for job_dir in list(self._workdir.iterdir()):
                # Per job, under the lock: a hook of this job cannot start preparing meanwhile.
                with self._lock:
                    if job_dir.name in self._active or not job_dir.is_dir():
                        continue
                    for folder in job_dir.glob("initialize-*"):
                        if _age(folder, now) >= retention:
                            shutil.rmtree(folder, ignore_errors=True)
                            removed.append(folder)
                    with contextlib.suppress(OSError):
                        job_dir.rmdir()  # only once empty
        for folder in removed:
            log.info("initialize hook folder removed folder=%s", folder)
        return removed


def _age(folder: Path, now: float) -> float:
    try:
        return now - folder.stat().st_mtime
    except OSError:
        return 0.0
