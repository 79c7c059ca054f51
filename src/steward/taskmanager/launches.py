"""Launching an admitted attempt (:mod:`.admission`): prepared, then executed, on a worker.

A launch worker runs the slow steps, so heartbeats keep flowing: prepare the launch document
(:mod:`.preparation`), check the slots, take the lease and only then spawn (rule 3,
:meth:`~steward.taskmanager.execution.Executions.start_with`): a warm spare when the job can
use one, else a cold runner (always for a job with its own ``env``: the runner is spawned
with it, so its Spark JVM and every process it starts have it too). Every failure ends or
rejects the attempt with its cause; none escapes the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from steward.errors import CoordinationError, FencedError, StewardError, is_unavailable
from steward.metrics import TaskManagerMetrics
from steward.store.leases import LeaseHeldError
from steward.supervisor.process_group import ProcessGroup, SpawnError
from steward.supervisor.runner_process import RunnerProcess, runner_env
from steward.taskmanager.execution import Execution, Executions
from steward.taskmanager.preparation import Launch, Preparation
from steward.taskmanager.proxy_users import driver_env
from steward.taskmanager.reporting import Attempt, Attempts
from steward.taskmanager.scratch import with_scratch
from steward.taskmanager.self_fencing import Fence
from steward.taskmanager.spares import SparePool
from steward.wire.heartbeat import Rejection, StartAttempt
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import AttemptCancelled, FailedEvent, error_type_name
from steward.wire.warm import files_cold_reason

log = logging.getLogger(__name__)


class Launches:
    """The launches of one TaskManager's admitted attempts; :meth:`close` stops launching."""

    def __init__(
        self,
        *,
        tm_id: str,
        attempts: Attempts,
        executions: Executions,
        preparation: Preparation,
        spares: SparePool | None,
        metrics: TaskManagerMetrics,
        fence: Fence,
        log_max_size: int | None,
        workers: int,
    ) -> None:
        self._attempts = attempts
        self._executions = executions
        self._preparation = preparation
        self._spares = spares
        self._metrics = metrics
        self._fence = fence
        self._log_max_size = log_max_size
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix=f"{tm_id}-launch")

    def close(self) -> None:
        """No more launches; those not begun are dropped (their attempts are being stopped)."""
        self._workers.shutdown(wait=False, cancel_futures=True)

    def submit(self, attempt: Attempt, command: StartAttempt) -> None:
        """Launch an admitted attempt on a worker."""
        self._workers.submit(self._launch, attempt, command)

    def _launch(self, attempt: Attempt, command: StartAttempt) -> None:
        try:
            self._launch_or_refuse(attempt, command)
        except Exception as exc:
            log.exception("launch failed job=%s attempt=%d", attempt.job_id, attempt.attempt)
            self._attempts.end(attempt, failed(exc), lease_released=True)

    def _launch_or_refuse(self, attempt: Attempt, command: StartAttempt) -> None:
        launch = self._prepare(attempt, command)
        if launch is None:
            return
        runner = RunnerProcess(
            launch.document,
            cwd=launch.working_dir,
            log_path=launch.log_path,
            on_event=lambda event: self._attempts.runner_event(attempt, event),
            env=_env(launch),
            log_max_size=self._log_max_size,
            user=launch.user,
        )
        self._attempts.attach(attempt, runner)
        execution = self._execute(attempt, launch)
        if execution is None:
            return
        runner = attempt.runner or runner  # a warm spare, if one was handed out
        runner.begin()
        self._metrics.attempts_started.inc()
        grace = self._attempts.running(attempt, execution.group.pid, execution.started_at)
        if grace is not None:
            runner.cancel(grace)

    def _prepare(self, attempt: Attempt, command: StartAttempt) -> Launch | None:
        """The launch document, and the attempt sized to its job's slots; None if the attempt
        was refused or ended instead."""
        attempts = self._attempts
        try:
            launch = self._preparation.prepare(command)
        except StewardError as exc:
            if is_unavailable(exc):
                # The storage did not answer: nothing ran, so this is a refusal, and the
                # leader tries again after its rejection back-off, spending no restart (rule 9).
                message = f"blob storage unavailable while preparing the attempt: {exc}"
                attempts.reject(attempt, Rejection.FENCED, message)
                return None
            log.warning(
                "attempt cannot be prepared job=%s attempt=%d cause=%s",
                attempt.job_id,
                attempt.attempt,
                exc,
            )
            attempts.end(attempt, failed(exc), lease_released=True)
            return None
        if not attempts.resize(attempt, launch.spec.slots):
            message = f"job needs {launch.spec.slots} slot(s); this TaskManager has too few free"
            attempts.reject(attempt, Rejection.NO_SLOT, message)
            return None
        if attempt.cancel_grace is not None:
            cancelled = AttemptCancelled("the attempt was cancelled before it started")
            attempts.end(attempt, failed(cancelled), lease_released=True)
            return None
        return launch

    def _execute(self, attempt: Attempt, launch: Launch) -> Execution | None:
        """The lease taken, then the process spawned; None if the attempt was refused or ended
        instead."""
        attempts = self._attempts
        try:
            return self._executions.start_with(
                attempt.job_id, attempt.attempt, attempt.epoch, self._spawner(attempt, launch)
            )
        except LeaseHeldError as exc:
            attempts.reject(attempt, Rejection.LEASE_HELD, str(exc))
        except FencedError as exc:
            rejection = Rejection.FENCED if self._fence.fenced else Rejection.STALE_EPOCH
            attempts.reject(attempt, rejection, str(exc))
        except CoordinationError as exc:
            message = f"ZooKeeper unreachable while taking the lease: {exc}"
            attempts.reject(attempt, Rejection.FENCED, message)
        except SpawnError as exc:
            attempts.end(attempt, failed(exc), lease_released=True)
        return None

    def _spawner(self, attempt: Attempt, launch: Launch) -> Callable[[], ProcessGroup]:
        """What starts the attempt's process once its lease is ours: a warm spare or a cold
        runner (already attached to the attempt)."""

        def spawn() -> ProcessGroup:
            pool, spare = self._spares, None
            # A spare runs as this process's user: a proxy user's driver is always cold.
            if (
                pool is not None
                and launch.user is None
                and files_cold_reason(launch.document) is None
            ):
                spare = pool.take(launch.spec.spark_conf, launch.document.spark_master)
            if pool is None or spare is None:
                assert attempt.runner is not None
                return attempt.runner.spawn()
            try:
                spare.assign(
                    launch.document,
                    log_path=launch.log_path,
                    on_event=lambda event: self._attempts.runner_event(attempt, event),
                )
            except OSError as exc:  # its log could not move: use a cold runner instead
                log.warning("warm spare not usable, going cold pid=%s cause=%s", spare.pid, exc)
                spare.kill()
                assert attempt.runner is not None
                return attempt.runner.spawn()
            self._attempts.attach(attempt, spare)
            pool.wake()  # warm its replacement now
            log.info(
                "attempt on a warm spare job=%s attempt=%d pid=%s",
                attempt.job_id,
                attempt.attempt,
                spare.pid,
            )
            return spare.group

        return spawn


def _env(launch: Launch) -> dict[str, str]:
    """The runner's environment: a proxy user's driver gets none of this process's secrets;
    every runner gets its attempt's scratch folder for temporary files."""
    job_env = launch.spec.env
    user = launch.user
    env = runner_env(job_env) if user is None else driver_env(user, job_env)
    return with_scratch(env, launch.scratch_dir, job_env)


def failed(exc: BaseException) -> FailedEvent:
    """The outcome of an attempt that ``exc`` ended before (or instead of) its runner."""
    # A class may say retrying cannot help (an environment that cannot be built, say).
    permanent = getattr(exc, "permanent", False) is True
    return FailedEvent(
        error=ErrorInfo(type=error_type_name(type(exc)), message=str(exc), permanent=permanent)
    )
