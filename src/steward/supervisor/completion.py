"""One runner process run to its end within a deadline: the leader's way of running a job's
``initialize`` hook outside its own process (rule 6), whatever the hook does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from steward.supervisor.runner_process import KILL_WAIT, RunnerProcess
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent, FinalEvent, LaunchDocument, RunMode

log = logging.getLogger(__name__)

INITIALIZE_TIMEOUT_ERROR = "steward.InitializeTimeout"
ATTEMPT_TIMEOUT_ERROR = "steward.AttemptTimeout"


def run_to_completion(
    launch: LaunchDocument,
    *,
    cwd: Path,
    log_path: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    on_spawned: Callable[[RunnerProcess], None] | None = None,
    log_max_size: int | None = None,
) -> FinalEvent:
    """Run one runner process to its end, at most ``timeout`` seconds; return its outcome.

    ``on_spawned(runner)`` is called once the process runs, so that the caller can kill it
    early (a cancelled job, a leader stepping down).

    For a leader running a job's ``initialize`` hook (``launch.mode`` = initialize) in a child
    process: whatever the hook does, it cannot take the caller down. On timeout the whole
    process group is killed and the outcome is a failed event of type
    ``steward.InitializeTimeout`` (``steward.AttemptTimeout`` in main mode). A runner that
    exits without a final event gives :func:`~steward.wire.heartbeat.lost_outcome`. Raises
    :class:`~steward.supervisor.process_group.SpawnError` only if no process could start.
    ``log_max_size`` caps the log as an attempt's (:mod:`steward.supervisor.logcap`).
    """
    runner = RunnerProcess(
        launch, cwd=cwd, log_path=log_path, env=env, python=python, log_max_size=log_max_size
    )
    deadline = time.monotonic() + timeout
    runner.start()
    try:
        if on_spawned is not None:
            on_spawned(runner)
        # EOF on the events pipe first (the runner exited; cheap to wait for), then the group.
        runner.wait_events_closed(max(0.0, deadline - time.monotonic()))
        if runner.wait_gone(max(0.0, deadline - time.monotonic())):
            return runner.outcome()
        final = runner.final
        runner.kill()
        if not runner.wait_gone(KILL_WAIT):
            log.error("runner group survived SIGKILL job=%s pgid=%d", launch.job_id, runner.pid)
        if final is not None:
            return final  # the hook did end; only the clean-up after it was slow
        log.warning(
            "runner timed out job=%s attempt=%d mode=%s timeout=%.1fs",
            launch.job_id,
            launch.attempt,
            launch.mode,
            timeout,
        )
        return _timeout_outcome(launch, timeout)
    finally:
        if not runner.wait_gone(0.0):  # an exception on the way (the caller's callback)
            runner.kill()
            runner.wait_gone(KILL_WAIT)
        runner.close()


def _timeout_outcome(launch: LaunchDocument, timeout: float) -> FailedEvent:
    if launch.mode is RunMode.INITIALIZE:
        kind, what = INITIALIZE_TIMEOUT_ERROR, "the initialize hook"
    else:
        kind, what = ATTEMPT_TIMEOUT_ERROR, f"entrypoint {launch.spec.entrypoint}"
    return FailedEvent(
        error=ErrorInfo(
            type=kind,
            message=f"{what} of job {launch.job_id} did not finish within {timeout:g}s;"
            " its processes were killed",
        )
    )
