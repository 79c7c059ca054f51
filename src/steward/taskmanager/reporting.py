"""Reporting: what one TaskManager knows about its attempts, as it reports them to the leader.

This module owns the TaskManager's side of the heartbeat's reliable delivery
(:mod:`steward.wire.heartbeat`): each attempt's phase, its latest progress, its checkpoint events
numbered from 1 and kept until acknowledged, its outcome (or rejection) sent in every heartbeat
until acknowledged, and the rule for forgetting an attempt: only once its outcome is
acknowledged *and* its lease is released. It also accounts for slots and remembers recently
ended attempts, so a repeated start command cannot run an attempt twice.

Every change goes through :class:`Attempts` under one lock (runner event threads, the
execution monitor, launch workers and heartbeat replies all change attempts); changes the
leader should hear about at once set :attr:`Attempts.changed`; new progress sets
:attr:`Attempts.progressed`, and the reports carry it once it is published
(:meth:`Attempts.publish_progress`, paced by :mod:`.progress_pacer`).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from steward.supervisor.runner_process import RunnerProcess
from steward.taskmanager.events import AttemptEvents
from steward.wire.heartbeat import Ack, AttemptReport, Rejection, ReportedCheckpoint, StartAttempt
from steward.wire.records import SparkApp
from steward.wire.runner_protocol import (
    CheckpointEvent,
    FailedEvent,
    FinalEvent,
    ProgressEvent,
    RunnerEvent,
    SparkAppEvent,
)
from steward.wire.states import AttemptPhase
from steward.wire.values import JsonValue

log = logging.getLogger(__name__)

Key = tuple[str, int]

_ENDED_REMEMBERED = 4096
"""How many forgotten attempts are remembered to refuse a repeated start command."""


@dataclass
class Attempt:
    """One attempt on this TaskManager. Change it only through :class:`Attempts`."""

    job_id: str
    attempt: int
    epoch: int
    phase: AttemptPhase = AttemptPhase.STARTING
    slots: int = 1
    pid: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    progress: dict[str, JsonValue] | None = None
    """The latest its pipeline reported."""
    progress_sent: dict[str, JsonValue] | None = None
    """The progress its reports carry: the latest as of the last :meth:`Attempts.publish_progress`
    (at most once per ``heartbeat.progress-interval``, :mod:`.progress_pacer`)."""
    spark_app: SparkApp | None = None
    checkpoints: list[ReportedCheckpoint] = field(default_factory=list)
    next_seq: int = 1
    outcome: FinalEvent | None = None
    rejection: Rejection | None = None
    rejection_message: str | None = None
    lease_released: bool = False
    outcome_recorded: bool = False
    """Its outcome record was created with the lease's release: delete it once forgotten."""
    outcome_acked: bool = False
    runner: RunnerProcess | None = None
    cancel_grace: float | None = None
    """Set once the leader asked to cancel: the grace before SIGKILL."""
    fenced_reason: str | None = None
    """Set when self-fencing killed it: its outcome then says so (unless it had one)."""

    @property
    def key(self) -> Key:
        return (self.job_id, self.attempt)

    @property
    def active(self) -> bool:
        """Starting or running: it holds a slot."""
        return self.phase in (AttemptPhase.STARTING, AttemptPhase.RUNNING)

    @property
    def settled(self) -> bool:
        return self.phase in (AttemptPhase.ENDED, AttemptPhase.REJECTED)

    def report(self) -> AttemptReport:
        return AttemptReport(
            job_id=self.job_id,
            attempt=self.attempt,
            epoch=self.epoch,
            phase=self.phase,
            pid=self.pid,
            started_at=self.started_at,
            ended_at=self.ended_at,
            progress=self.progress_sent,
            checkpoints=list(self.checkpoints),
            outcome=self.outcome,
            rejection=self.rejection,
            rejection_message=self.rejection_message,
            lease_released=self.lease_released,
            spark_app=self.spark_app,
        )


class Attempts:
    """The attempts of one TaskManager, with its slot count."""

    def __init__(self, slots: int, events: AttemptEvents | None = None) -> None:
        """``events`` is told (under the lock) when an attempt is forgotten: settled, its
        outcome acknowledged and its lease released."""
        self.slots = slots
        self._events = events
        self._lock = threading.Lock()
        self._attempts: dict[Key, Attempt] = {}
        self._ended: collections.OrderedDict[Key, None] = collections.OrderedDict()
        self.changed = threading.Event()
        """Set when the leader should hear at once (phase, checkpoint, lease released)."""
        self.progressed = threading.Event()
        """Set when an attempt reports progress, cleared when it is published: the leader
        hears it within ``heartbeat.progress-interval`` (paced, not at once: a pipeline may
        report many times a second)."""

    # ------------------------------------------------------------------ queries

    def get(self, job_id: str, attempt: int) -> Attempt | None:
        with self._lock:
            return self._attempts.get((job_id, attempt))

    def all(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts.values())

    def active(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self._attempts.values() if a.active]

    def used_slots(self) -> int:
        with self._lock:
            return self._used()

    def slots_without_runner(self) -> int:
        """Free slots, counting a starting attempt as free until its runner process exists:
        its spare must not be killed for want of a slot just before it is handed over."""
        taken = sum(
            a.slots for a in self.active() if a.runner is not None and a.runner.pid is not None
        )
        return self.slots - taken

    def _used(self) -> int:
        return sum(a.slots for a in self._attempts.values() if a.active)

    def unless_known(self, job_id: str, attempt: int | None, action: Callable[[], object]) -> bool:
        """Run ``action`` under the lock unless an attempt of ``job_id`` (``attempt`` None:
        any attempt) is known; True if it ran.

        How an attempt's folder is removed without racing a start that unpacks into it: an
        attempt is known from its admission on, before anything is unpacked.
        """
        with self._lock:
            if any(
                job == job_id and (attempt is None or number == attempt)
                for job, number in self._attempts
            ):
                return False
            action()
            return True

    def reports(self) -> list[AttemptReport]:
        with self._lock:
            return [a.report() for a in self._attempts.values()]

    def publish_progress(self) -> bool:
        """Let the reports carry every attempt's latest progress; whether any was new."""
        with self._lock:
            self.progressed.clear()
            fresh = [a for a in self._attempts.values() if a.progress is not a.progress_sent]
            for attempt in fresh:
                attempt.progress_sent = attempt.progress
            return bool(fresh)

    # ------------------------------------------------------------------ admission

    def admit(
        self, command: StartAttempt, refusal: Rejection | None, message: str
    ) -> Attempt | None:
        """Record a start command; None if this attempt is already known (a repeat).

        With ``refusal`` the attempt is recorded REJECTED; without, STARTING if a slot is free,
        else REJECTED with ``no-slot``.
        """
        key = (command.job_id, command.attempt)
        with self._lock:
            if key in self._attempts or key in self._ended:
                return None
            attempt = Attempt(command.job_id, command.attempt, command.epoch)
            if refusal is None and self._used() + attempt.slots > self.slots:
                refusal = Rejection.NO_SLOT
                message = f"all {self.slots} slot(s) of this TaskManager are taken"
            if refusal is not None:
                self._reject(attempt, refusal, message)
            self._attempts[key] = attempt
            self.changed.set()
            return attempt

    def resize(self, attempt: Attempt, slots: int) -> bool:
        """Let a starting attempt hold ``slots`` slots (its job's spec); False if too few free."""
        with self._lock:
            if self._used() - attempt.slots + slots > self.slots:
                return False
            attempt.slots = slots
            return True

    def reject(self, attempt: Attempt, rejection: Rejection, message: str) -> None:
        with self._lock:
            self._reject(attempt, rejection, message)
            self.changed.set()

    def _reject(self, attempt: Attempt, rejection: Rejection, message: str) -> None:
        attempt.phase = AttemptPhase.REJECTED
        attempt.rejection, attempt.rejection_message = rejection, message
        attempt.lease_released = True  # it never held one
        log.info(
            "attempt rejected job=%s attempt=%d epoch=%d rejection=%s message=%s",
            attempt.job_id,
            attempt.attempt,
            attempt.epoch,
            rejection,
            message,
        )

    # ------------------------------------------------------------------ life cycle

    def attach(self, attempt: Attempt, runner: RunnerProcess) -> None:
        with self._lock:
            attempt.runner = runner

    def running(self, attempt: Attempt, pid: int, started_at: float) -> float | None:
        """Mark a starting attempt RUNNING; returns the cancel grace if a cancel is pending."""
        with self._lock:
            if attempt.phase is AttemptPhase.STARTING:
                attempt.phase = AttemptPhase.RUNNING
                attempt.pid, attempt.started_at = pid, started_at
                self.changed.set()
            return attempt.cancel_grace

    def request_cancel(self, attempt: Attempt, grace: float) -> None:
        with self._lock:
            attempt.cancel_grace = grace

    def mark_fenced(self, reason: str) -> list[Attempt]:
        """Note on every active attempt that self-fencing is killing it; returns them."""
        with self._lock:
            victims = [a for a in self._attempts.values() if a.active]
            for attempt in victims:
                attempt.fenced_reason = reason
            return victims

    def end(self, attempt: Attempt, outcome: FinalEvent, *, lease_released: bool = False) -> None:
        """The attempt's whole process group is gone (or never was): record its outcome."""
        with self._lock:
            if attempt.settled:
                return
            attempt.phase = AttemptPhase.ENDED
            attempt.outcome = outcome
            attempt.ended_at = time.time()
            attempt.lease_released = attempt.lease_released or lease_released
            self.changed.set()
            self._forget_if_done(attempt)
        log.info(
            "attempt ended job=%s attempt=%d epoch=%d outcome=%s error=%s",
            attempt.job_id,
            attempt.attempt,
            attempt.epoch,
            outcome.event,
            outcome.error.type if isinstance(outcome, FailedEvent) else None,
        )

    def released(self, job_id: str, attempt_number: int, *, outcome_recorded: bool = False) -> None:
        """The attempt's lease is no longer held (released, or gone with a session)."""
        with self._lock:
            attempt = self._attempts.get((job_id, attempt_number))
            if attempt is None:
                return
            attempt.lease_released = True
            attempt.outcome_recorded = attempt.outcome_recorded or outcome_recorded
            self.changed.set()
            self._forget_if_done(attempt)

    # ------------------------------------------------------------------ runner events

    def runner_event(self, attempt: Attempt, event: RunnerEvent) -> None:
        """What its runner reported while it runs (its outcome comes with its exit)."""
        if isinstance(event, ProgressEvent):
            self.progress(attempt, event.progress)
        elif isinstance(event, CheckpointEvent):
            self.checkpoint(attempt, event)
        elif isinstance(event, SparkAppEvent):
            self.spark_app(attempt, event.app)

    def progress(self, attempt: Attempt, progress: dict[str, JsonValue]) -> None:
        with self._lock:
            attempt.progress = progress
            self.progressed.set()

    def spark_app(self, attempt: Attempt, app: SparkApp) -> None:
        with self._lock:
            attempt.spark_app = app
            self.changed.set()

    def checkpoint(self, attempt: Attempt, event: CheckpointEvent) -> None:
        with self._lock:
            attempt.checkpoints.append(ReportedCheckpoint(seq=attempt.next_seq, event=event))
            attempt.next_seq += 1
            self.changed.set()

    # ------------------------------------------------------------------ acknowledgements

    def acknowledge(self, ack: Ack) -> None:
        with self._lock:
            attempt = self._attempts.get((ack.job_id, ack.attempt))
            if attempt is None:
                return
            if ack.checkpoint_seq:
                attempt.checkpoints = [c for c in attempt.checkpoints if c.seq > ack.checkpoint_seq]
            if ack.outcome and attempt.settled:
                attempt.outcome_acked = True
                self._forget_if_done(attempt)

    def _forget_if_done(self, attempt: Attempt) -> None:
        if not (attempt.settled and attempt.outcome_acked and attempt.lease_released):
            return
        if self._attempts.get(attempt.key) is not attempt:
            return
        del self._attempts[attempt.key]
        if attempt.phase is AttemptPhase.ENDED:
            # A rejected attempt may be offered again; one that ran must never run twice.
            self._ended[attempt.key] = None
            while len(self._ended) > _ENDED_REMEMBERED:
                self._ended.popitem(last=False)
        if attempt.runner is not None:
            attempt.runner.close()
        log.info(
            "attempt forgotten job=%s attempt=%d phase=%s",
            attempt.job_id,
            attempt.attempt,
            attempt.phase,
        )
        if self._events is not None:
            try:
                self._events.attempt_forgotten(
                    attempt.job_id, attempt.attempt, attempt.outcome_recorded
                )
            except Exception:
                log.exception("attempt_forgotten failed job=%s", attempt.job_id)
