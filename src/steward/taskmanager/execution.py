"""Executing attempts: each an :class:`Execution` (lease + process group) of this TaskManager.

This module owns the order that makes rule 3 hold on a TaskManager:

- start: acquire the lease first, then spawn; if spawning fails, release the lease again;
- end: a monitor thread reports the exit (:meth:`AttemptEvents.attempt_exited`) once the
  attempt's *whole* process group is gone (runner and Spark JVM), then releases its lease,
  together with the attempt's outcome record when :meth:`AttemptEvents.outcome_of` knows the
  outcome (one multi-op);
- :meth:`Executions.kill_all` (self-fencing, shutdown) kills every group; their leases are
  released by the monitor as usual, once the groups are really gone.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from steward.errors import (
    CoordinationError,
    FencedError,
    NodeExistsError,
    StewardError,
    StoreError,
)
from steward.store.leases import ExecutionLeases, LeaseHeldError, Released
from steward.supervisor.process_group import ProcessGroup
from steward.taskmanager.events import AttemptEvents
from steward.wire.records import ExecutionLease

log = logging.getLogger(__name__)

Spawn = Callable[[], ProcessGroup]


@dataclass
class Execution:
    """One attempt of one job running on this TaskManager."""

    job_id: str
    lease: ExecutionLease
    group: ProcessGroup
    started_at: float = field(default_factory=time.time)
    exited: bool = False
    """The whole group is gone and its exit was reported; the lease may await release."""
    outcome_recorded: bool = False

    @property
    def attempt(self) -> int:
        return self.lease.attempt

    @property
    def epoch(self) -> int:
        return self.lease.epoch


class Executions:
    """The registry of this TaskManager's attempts, with the monitor that cleans up after them."""

    def __init__(
        self,
        leases: ExecutionLeases,
        events: AttemptEvents | None = None,
        *,
        poll_interval: float = 0.1,
    ) -> None:
        """``events``: told each attempt's exit, release and dropped log bytes (None: nobody)."""
        self._leases = leases
        self._events = events
        self._draining: list[Execution] = []
        """Released executions whose log capper may still be draining (monitor thread only)."""
        self._orphans: set[tuple[str, int]] = set()
        self._records_lock = threading.Lock()  # never held with another lock
        self._records_to_drop: set[tuple[str, int]] = set()
        self._refusing: str | None = None
        self._poll_interval = poll_interval
        self._lock = threading.Lock()
        self._running: dict[str, Execution] = {}
        self._kill_generation = 0
        self._stop = threading.Event()
        self._monitor = threading.Thread(
            target=self._monitor_loop, name=f"{leases.tm_id}-executions", daemon=True
        )

    def start_monitor(self) -> Executions:
        self._monitor.start()
        return self

    def close(self) -> None:
        """Stop the monitor (the attempts are left as they are; call kill_all first to end them)."""
        self._stop.set()
        if self._monitor.is_alive():
            self._monitor.join(timeout=5)

    # ------------------------------------------------------------------ start

    def start(
        self,
        job_id: str,
        attempt: int,
        epoch: int,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> Execution:
        """Acquire the lease of ``job_id`` for ``attempt`` under ``epoch``, then spawn ``argv``.

        Raises :class:`FencedError` (stale epoch, or this TaskManager fenced itself meanwhile),
        :class:`LeaseHeldError`, or :class:`SpawnError` (the lease is released again).
        """
        return self.start_with(
            job_id,
            attempt,
            epoch,
            lambda: ProcessGroup.spawn(argv, cwd=cwd, env=env, log_path=log_path),
        )

    def start_with(self, job_id: str, attempt: int, epoch: int, spawn: Spawn) -> Execution:
        """Like :meth:`start`, with ``spawn()`` starting the process group once the lease is ours.

        ``spawn`` runs under this registry's lock, after the lease was acquired, and only if no
        :meth:`kill_all` ran meanwhile (the runner driver passes its own, which also sets up
        the events pipe). If the outcome of the lease's creation is unknown (the connection
        dropped), its release is retried by the monitor so no orphan lease blocks the job.
        """
        with self._lock:
            self._refuse_if_refusing(job_id, epoch)
            self._refuse_if_present(job_id)
            generation = self._kill_generation
        try:
            lease = self._leases.acquire(job_id, attempt, epoch)
        except (CoordinationError, StoreError) as exc:
            if not isinstance(exc, LeaseHeldError | NodeExistsError):
                with self._lock:
                    self._orphans.add((job_id, attempt))
            raise
        try:
            execution = self._register(lease, job_id, generation, spawn)
        except BaseException:
            self._release_quietly(job_id, attempt)
            raise
        group = execution.group
        log.info(
            "attempt started job=%s attempt=%d epoch=%d pgid=%d",
            job_id,
            attempt,
            epoch,
            group.pgid,
        )
        return execution

    def _register(
        self,
        lease: ExecutionLease,
        job_id: str,
        generation: int,
        spawn: Callable[[], ProcessGroup],
    ) -> Execution:
        with self._lock:
            # kill_all ran while we acquired: the fenced TaskManager must not start anything.
            if generation != self._kill_generation:
                raise FencedError(
                    f"TaskManager fenced itself while starting job {job_id!r}", epoch=lease.epoch
                )
            self._refuse_if_refusing(job_id, lease.epoch)
            self._refuse_if_present(job_id)
            execution = Execution(job_id, lease, spawn())
            self._running[job_id] = execution
            return execution

    def _refuse_if_refusing(self, job_id: str, epoch: int) -> None:
        if self._refusing is not None:
            raise FencedError(f"not starting job {job_id!r}: {self._refusing}", epoch=epoch)

    def refuse_starts(self, reason: str) -> None:
        """Refuse every start (FencedError) until :meth:`accept_starts`: self-fencing, stop.

        A start already past its lease acquisition when this is called is refused too, as
        long as it has not spawned yet; one that has spawned is what :meth:`kill_all` is for.
        """
        with self._lock:
            self._refusing = reason

    def accept_starts(self) -> None:
        with self._lock:
            self._refusing = None

    @property
    def refusing(self) -> str | None:
        """Why starts are refused now, or None."""
        return self._refusing

    def _refuse_if_present(self, job_id: str) -> None:
        # A previous attempt whose group or lease is not yet cleaned up: rule 3 holds on this
        # TaskManager even if its lease vanished with a lost session.
        previous = self._running.get(job_id)
        if previous is not None:
            raise LeaseHeldError(job_id, previous.lease)
        if any(orphan == job_id for orphan, _attempt in self._orphans):
            # A lease of ours may exist from a start whose reply was lost: release it first.
            raise LeaseHeldError(job_id, None)

    def _release_quietly(self, job_id: str, attempt: int) -> None:
        try:
            self._leases.release(job_id, attempt)
        except StewardError as exc:
            # Nothing runs under it; the monitor retries until it is gone (or our session is).
            log.warning("could not release lease job=%s attempt=%d cause=%r", job_id, attempt, exc)
            with self._lock:
                self._orphans.add((job_id, attempt))

    # ------------------------------------------------------------------ queries, kill

    def get(self, job_id: str) -> Execution | None:
        with self._lock:
            return self._running.get(job_id)

    def running(self) -> dict[str, Execution]:
        """The attempts not yet cleaned up, by job id (exited ones may await their release)."""
        with self._lock:
            return dict(self._running)

    def kill_all(self, reason: str) -> int:
        """SIGKILL every attempt's process group; returns how many were signalled."""
        with self._lock:
            self._kill_generation += 1
            victims = [e for e in self._running.values() if not e.exited]
        for execution in victims:
            log.warning(
                "killing attempt job=%s attempt=%d epoch=%d pgid=%d reason=%s",
                execution.job_id,
                execution.attempt,
                execution.epoch,
                execution.group.pgid,
                reason,
            )
            execution.group.kill()
        return len(victims)

    # ------------------------------------------------------------------ monitor

    def _monitor_loop(self) -> None:
        while not self._stop.wait(self._poll_interval):
            try:
                self.check_once()
            except Exception:
                log.exception("execution monitor failed; retrying")

    def check_once(self) -> None:
        """One monitor pass: report gone groups, release their leases."""
        for execution in list(self.running().values()):
            if not execution.exited and execution.group.alive():
                continue
            if not execution.exited:
                execution.exited = True
                self._report_exit(execution)
            if self._try_release(execution):
                with self._lock:
                    if self._running.get(execution.job_id) is execution:
                        del self._running[execution.job_id]
                self._report_released(execution)
                self._draining.append(execution)
        self._count_log_drops()
        self._release_orphans()
        self._drop_outcome_records()

    def _count_log_drops(self) -> None:
        still: list[Execution] = []
        for execution in self._draining:
            dropped = execution.group.log_dropped()
            if dropped is None:
                still.append(execution)
            elif dropped and self._events is not None:
                self._events.attempt_log_dropped(dropped)
        self._draining = still

    def drop_outcome_record(self, job_id: str, attempt: int) -> None:
        """Delete the attempt's outcome record on the monitor's next pass (retried until
        done); the caller may hold any lock."""
        with self._records_lock:
            self._records_to_drop.add((job_id, attempt))

    def _drop_outcome_records(self) -> None:
        with self._records_lock:
            pending = sorted(self._records_to_drop)
        for job_id, attempt in pending:
            try:
                self._leases.drop_outcome(job_id, attempt)
            except StewardError as exc:
                log.info("outcome record drop deferred job=%s attempt=%d: %r", job_id, attempt, exc)
                continue
            with self._records_lock:
                self._records_to_drop.discard((job_id, attempt))

    def _report_released(self, execution: Execution) -> None:
        if self._events is None:
            return
        try:
            self._events.attempt_released(
                execution.job_id, execution.attempt, execution.outcome_recorded
            )
        except Exception:
            log.exception("attempt_released failed job=%s", execution.job_id)

    def _release_orphans(self) -> None:
        # Leases whose creation may have happened although its reply was lost: release() deletes
        # only a lease of this session and attempt, so a lease that was never made is left be.
        with self._lock:
            pending = sorted(self._orphans)
        for job_id, attempt in pending:
            try:
                self._leases.release(job_id, attempt)
            except StewardError as exc:
                log.info(
                    "orphan lease release deferred job=%s attempt=%d cause=%r", job_id, attempt, exc
                )
                continue
            with self._lock:
                self._orphans.discard((job_id, attempt))

    def _report_exit(self, execution: Execution) -> None:
        returncode = execution.group.returncode
        log.info(
            "attempt gone job=%s attempt=%d epoch=%d returncode=%s",
            execution.job_id,
            execution.attempt,
            execution.epoch,
            returncode,
        )
        if self._events is None:
            return
        try:
            self._events.attempt_exited(execution.job_id, execution.attempt, returncode)
        except Exception:
            log.exception("attempt_exited failed job=%s", execution.job_id)

    def _try_release(self, execution: Execution) -> bool:
        """Release the lease (with the outcome record if the outcome is known); False (retry
        next pass) if ZooKeeper cannot be reached now."""
        job_id, attempt = execution.job_id, execution.attempt
        outcome = self._events.outcome_of(job_id, attempt) if self._events is not None else None
        try:
            if outcome is None:
                self._leases.release(job_id, attempt)
            else:
                released = self._leases.release_recording(job_id, attempt, outcome)
                execution.outcome_recorded = released is Released.RECORDED
        except StewardError as exc:
            log.warning(
                "lease release deferred job=%s attempt=%d cause=%r",
                execution.job_id,
                execution.attempt,
                exc,
            )
            return False
        return True
