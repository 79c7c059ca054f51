"""Running jobs' ``initialize(ctx)`` hooks: in child processes of the leader, never inside it.

DESIGN rule 6: user code never runs inside a JobManager. The hook of a job runs in a runner
process (mode INITIALIZE) with a timeout, on a bounded pool of threads so that a leader
recovering many jobs runs a few hooks at a time. A pipeline whose sources cannot define an
``initialize`` function skips the child process entirely (recovering 1,000 jobs must not
start 1,000 Python processes for nothing).
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from steward.config import Configuration
from steward.errors import StewardError
from steward.model import ErrorInfo, JobGraph, JobGraphPointer
from steward.runtime.driver import RunnerProcess, run_to_completion
from steward.runtime.protocol import FailedEvent, FinishedEvent, LaunchDocument, RunMode
from steward.runtime.unpack import materialize, may_define_initialize
from steward.store.blob import BlobRef, BlobStore

log = logging.getLogger(__name__)


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
        self._config = config
        self._blobs = blobs
        self._workdir = workdir
        self._pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="hook")
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()
        self._running: dict[str, RunnerProcess] = {}
        self._closed = False

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
        if runner is not None:
            runner.kill()

    def cancel_all(self) -> None:
        """The term ended: kill every hook process, drop the queued ones."""
        with self._lock:
            self._closed = True
            runners = list(self._running.values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for runner in runners:
            runner.kill()

    def _spawned(self, job_id: str, runner: RunnerProcess) -> None:
        with self._lock:
            self._running[job_id] = runner
            doomed = self._closed or job_id in self._cancelled
        if doomed:
            runner.kill()

    def _run(self, work: _HookWork, on_done: OnDone) -> None:
        job_id = work.job_id
        try:
            outcome = self._outcome(work)
        except Exception as exc:
            log.exception("initialize hook could not run job=%s", job_id)
            outcome = FailedEvent(error=ErrorInfo(type="steward.InitializeError", message=f"{exc}"))
        with self._lock:
            if job_id in self._cancelled:
                return
        on_done(job_id, outcome)

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
                spark_master=graph.spec.spark_conf.get(
                    "spark.master", str(self._config["spark.master"])
                ),
                deadman_timeout=self._config.deadman_timeout,
            )
            log.info("initialize hook starting job=%s recovery=%s", job_id, work.is_recovery)
            outcome = run_to_completion(
                launch,
                cwd=where,
                log_path=where / "initialize.log",
                timeout=float(self._config["jobmanager.initialize-timeout"]),
                on_spawned=lambda runner: self._spawned(job_id, runner),
                # A hook that prints in a loop must not fill the JobManager's disk.
                log_max_size=self._config.attempt_log_max_size,
            )
        finally:
            with self._lock:
                self._running.pop(job_id, None)
            shutil.rmtree(where / "artifact", ignore_errors=True)
        log.info("initialize hook ended job=%s outcome=%s", job_id, outcome.event)
        return outcome
