"""One job's life on the leader: its attempts, its restart budget, cancellation.

A :class:`JobMaster` is a state machine with no I/O of its own (a job adopted from its record
reads its spec through the reader it was given, :mod:`.job_facts`, when an attempt of it ends
or is lost: a missing or corrupt graph then fails the job). The Dispatcher feeds it what happened
(an attempt deployed, running, ended, lost, rejected; a cancel) and carries out what it
answers: persist the status record, send a command, record a result. Keeping it pure keeps
every decision unit-testable, and keeps ZooKeeper and HTTP in one place (the Dispatcher).
Which attempt record changes when is decided here; the records are found, replaced and kept
to ``MAX_ATTEMPTS_KEPT`` by :mod:`.jobmaster_attempts`.

Rules it owns:

- an attempt that fails or is lost spends one restart of the job's strategy; one that is
  rejected (no slot, the lease still held by a previous attempt, a stale epoch) spends none,
  and the job waits in SCHEDULED with the reason shown (rule 9);
- a replacement for a lost attempt is never due before ``replacement_grace`` has passed
  (rule 4: the old lease is gone, plus a grace period);
- an attempt that failed with a permanent error (``ErrorInfo.permanent``: the code does not
  parse, its entrypoint is missing, its environment cannot be built) fails the job at once:
  no restart could end otherwise, so none is spent waiting for it;
- a cancel ends the job CANCELED, unless the attempt already finished: then it is FINISHED;
  the leader's cancel at the job's deadline (``timed_out``) ends it so too, saying TIMEOUT;
- a late outcome (:meth:`JobMaster.late_outcome`) of an attempt counted LOST is judged by
  :mod:`.late_outcomes`: a FINISHED one wins, a FAILED one only corrects the attempt's cause.
"""

from __future__ import annotations

import time
from typing import Final

from steward.wire.heartbeat import Rejection
from steward.wire.job_options import deadline, timeout_error
from steward.wire.jobs import JobGraphPointer, JobSpec
from steward.wire.records import (
    AttemptRecord,
    ErrorInfo,
    JobStatusRecord,
    SparkApp,
)
from steward.wire.runner_protocol import (
    AttemptCancelled,
    FailedEvent,
    FinishedEvent,
    error_type_name,
)
from steward.wire.states import AttemptState, JobState, TerminalState
from steward.wire.values import JsonValue

from . import jobmaster_attempts as attempts
from . import late_outcomes as late_rules
from .job_facts import JobFacts, LazySpec, SpecAtHand
from .jobmaster_records import restore, status_record
from .jobmaster_values import Deployment, Late, Terminal
from .restart import restart_delay, restarts_allowed

REJECTION_BACKOFF = 1.0
"""Seconds before a rejected attempt is tried again."""

_CANCELLED_TYPE = error_type_name(AttemptCancelled)
_WANTS_SLOT = frozenset((JobState.SCHEDULED, JobState.RESTARTING))


class JobMaster:
    """The state of one live job on the leader."""

    def __init__(
        self,
        spec: JobSpec | LazySpec,
        pointer: JobGraphPointer,
        submitted_at: float,
        *,
        record: JobStatusRecord | None = None,
    ) -> None:
        """``spec``: the job's spec, or (a job adopted from its record alone) a
        :class:`LazySpec` that reads it when first needed."""
        self._spec = SpecAtHand(spec)
        self.job_id: Final = self._spec.facts.job_id
        """Its id, kept as a plain attribute: read a dozen times a job by a takeover."""
        self.shown_env = self._spec.shown_env
        self.hookless: bool | None = None
        """Whether its pipeline cannot define ``initialize`` (None: not known), kept in its
        record so that a new leader can schedule the job without reading its graph."""
        self.pointer = pointer
        self.submitted_at = submitted_at
        self.state = JobState.SUBMITTED
        self.reason: str | None = None
        self.attempts: list[AttemptRecord] = []
        self.attempt_count = 0
        self.failures = 0
        self.current: Deployment | None = None
        self.not_before = 0.0
        """Monotonic time before which no attempt starts (a restart delay, a backoff)."""
        self.restart_at: float | None = None
        """While RESTARTING: ``not_before`` as wall-clock time, stored in the status record."""
        self.cancel_requested = False
        self.timed_out = False
        """Set before :meth:`cancel` at the job's deadline: it ends with reason TIMEOUT."""
        self.late: tuple[int, FinishedEvent] | None = None
        """An attempt counted LOST that finished after all: the job ends with its value once
        the attempt in flight is gone (kept in memory only: its TaskManager sends the outcome
        again until the job's result is recorded, to this leader or the next)."""
        self.is_recovery = False
        self.progress: dict[str, JsonValue] | None = None
        self.updated_at = time.time()
        if record is not None:
            restore(self, record)

    @property
    def facts(self) -> JobFacts:
        return self._spec.facts

    @property
    def spec(self) -> JobSpec:
        """The job's spec; for a job adopted from its record, read from its graph now (see
        :meth:`read_graph`; raises the store's StewardError)."""
        return self._spec.spec

    @property
    def broken(self) -> ErrorInfo | None:
        return self._spec.broken

    @property
    def deadline(self) -> float | None:
        """Wall-clock time at which the leader cancels the job (None: it has no timeout)."""
        return deadline(self.submitted_at, self.facts.timeout)

    def read_graph(self) -> ErrorInfo | None:
        """:meth:`SpecAtHand.read`: before a decision needs the spec, and anything changes."""
        return self._spec.read()

    @property
    def spec_at_hand(self) -> SpecAtHand:
        """Its spec as held: a graph read outside the lock (``pending``, then ``take``)."""
        return self._spec

    # ------------------------------------------------------------------ queries

    def wants_slot(self, now: float) -> bool:
        """Waiting for a TaskManager: SCHEDULED or RESTARTING, past any delay, nothing in flight."""
        return (
            self.state in _WANTS_SLOT
            and self.current is None
            and not self.cancel_requested
            and now >= self.not_before
        )

    def record(self, epoch: int) -> JobStatusRecord:
        return status_record(self, epoch)

    def attempt(self, number: int) -> AttemptRecord | None:
        return attempts.find(self.attempts, number)

    # ------------------------------------------------------------------ transitions

    def initializing(self) -> None:
        self.set_state(JobState.INITIALIZING, "running the initialize hook")

    def initialized(
        self, outcome: FinishedEvent | FailedEvent, *, waiting: str | None = None
    ) -> Terminal | None:
        """The initialize hook ended: the job may be scheduled (``waiting``: the reason it
        waits, if known), or it failed for good."""
        if isinstance(outcome, FailedEvent):
            self.set_state(JobState.FAILED, f"initialize failed: {outcome.error.message}")
            return Terminal(TerminalState.FAILED, error=outcome.error)
        if self.cancel_requested:
            return self._canceled()
        self.schedule(waiting or "waiting for a free slot")
        return None

    def schedule(self, reason: str) -> None:
        if self.state is JobState.RESTARTING:
            self.reason = reason
        elif self.restart_at is not None:  # recovered while a restart delay was running
            left = max(0.0, self.restart_at - time.time())
            self.set_state(JobState.RESTARTING, f"{reason} (restart delay: {left:.1f}s left)")
        else:
            self.set_state(JobState.SCHEDULED, reason)

    def waiting(self, reason: str) -> bool:
        """No slot now: show why. True if the reason changed (worth persisting)."""
        if self.reason == reason:
            return False
        self.reason = reason
        self.updated_at = time.time()
        return True

    def deploy(self, taskmanager: str, epoch: int) -> Deployment:
        """Start the next attempt on ``taskmanager``."""
        self.attempt_count += 1
        deployment = Deployment(self.attempt_count, taskmanager, epoch)
        self.current = deployment
        self.restart_at = None
        attempts.append(
            self.attempts,
            AttemptRecord(
                number=deployment.number,
                taskmanager=taskmanager,
                epoch=epoch,
                state=AttemptState.DEPLOYING,
            ),
        )
        self.set_state(
            JobState.SCHEDULED, f"deploying attempt {deployment.number} to {taskmanager}"
        )
        return deployment

    def adopt(self, taskmanager: str, number: int, lease_epoch: int, epoch: int) -> Deployment:
        """A new leader found this attempt's lease: it keeps running (rule 8)."""
        attempts.adopt(self.attempts, taskmanager, number, lease_epoch, epoch)
        self.attempt_count = max(self.attempt_count, number)
        self.current = Deployment(number, taskmanager, lease_epoch, inherited=True)
        self._set_live()
        return self.current

    def await_report(self, number: int, taskmanager: str, epoch: int, until: float) -> None:
        """Recovered an attempt with no lease that its TaskManager may still report ended."""
        self.current = Deployment(
            number, taskmanager, epoch, await_report_until=until, inherited=True
        )
        self._set_live(f"waiting for {taskmanager} to report attempt {number}")

    def running(self, number: int, started_at: float | None) -> bool:
        """The attempt is reported running; True if that is news worth persisting."""
        if self.current is None or self.current.number != number:
            return False
        self.current.reported = True
        self.current.await_report_until = None
        if not attempts.start(self.attempts, number, started_at):
            return False
        if not self.cancel_requested:
            self.set_state(JobState.RUNNING, None)
        return True

    def spark_app(self, number: int, app: SparkApp) -> bool:
        """Attempt ``number`` drives Spark application ``app``; True if that is news."""
        record = self.attempt(number)
        if record is None or record.spark_app == app:
            return False
        attempts.put(self.attempts, record.model_copy(update={"spark_app": app}))
        return True

    def ended(
        self, number: int, outcome: FinishedEvent | FailedEvent, *, now: float
    ) -> Terminal | None:
        """The attempt's process group is gone with this outcome."""
        broken = self.read_graph()
        replacement = late_rules.replaces_late(self, number)
        if isinstance(outcome, FinishedEvent):
            self._finish_attempt(number, AttemptState.FINISHED, None, outcome.at)
            if replacement:
                return late_rules.finish(self)
            self.set_state(JobState.FINISHED, None)
            return Terminal(TerminalState.FINISHED, value=outcome.value)
        cancelled = outcome.error.type == _CANCELLED_TYPE
        state = AttemptState.CANCELED if cancelled else AttemptState.FAILED
        self._finish_attempt(number, state, outcome.error, outcome.at)
        if replacement:
            return late_rules.finish(self)
        if broken is not None:
            return self.fail(broken)
        return self._after_failure(outcome.error, now=now, grace=0.0)

    def lost(self, number: int, cause: ErrorInfo, *, now: float, grace: float) -> Terminal | None:
        """The attempt's TaskManager is gone (its lease with it) without an outcome."""
        broken = self.read_graph()
        replacement = late_rules.replaces_late(self, number)
        self._finish_attempt(number, AttemptState.LOST, cause, time.time())
        if replacement:
            return late_rules.finish(self)
        if broken is not None:
            return self.fail(broken)
        return self._after_failure(cause, now=now, grace=grace)

    def rejected(
        self, number: int, rejection: Rejection, message: str, *, now: float
    ) -> Terminal | None:
        """The TaskManager refused the attempt (or never got it): it never ran, spends nothing.

        A job being cancelled is CANCELED then: nothing of it runs any more.
        """
        if self.current is None or self.current.number != number:
            return None
        self.current = None
        self.attempts = [a for a in self.attempts if a.number != number]
        self.attempt_count = max((a.number for a in self.attempts), default=0)
        self.attempt_count = max(self.attempt_count, number - 1)
        if self.late is not None:
            return late_rules.finish(self)
        if self.cancel_requested:
            return self._canceled()
        self.not_before = now + REJECTION_BACKOFF
        self.set_state(
            JobState.SCHEDULED, f"attempt {number} refused ({rejection.value}): {message}"
        )
        return None

    def late_outcome(
        self, number: int, outcome: FinishedEvent | FailedEvent
    ) -> tuple[Late, Terminal | None]:
        """Attempt ``number`` reports an outcome after this job counted it LOST: see
        :func:`.late_outcomes.judge`."""
        return late_rules.judge(self, number, outcome)

    def cancel(self) -> Terminal | None:
        """Cancel: terminal at once unless an attempt is in flight (then CANCELLING)."""
        self.cancel_requested = True
        if self.current is None:
            return self._canceled()
        self.set_state(JobState.CANCELLING, self._cancelling())
        return None

    def withdrawn(self) -> Terminal | None:
        """The attempt in flight was withdrawn before its TaskManager took it (a cancel):
        nothing of it ran, and the cancel ends the job now."""
        self.current = None
        return self.cancel()

    def fail(self, error: ErrorInfo) -> Terminal:
        """The job cannot go on (its graph or state is unusable): FAILED with ``error``."""
        self.set_state(JobState.FAILED, error.message)
        return Terminal(TerminalState.FAILED, error=error)

    # ------------------------------------------------------------------ helpers

    def _canceled(self) -> Terminal:
        if not self.timed_out or self.facts.timeout is None:
            self.set_state(JobState.CANCELED, "cancelled")
            return Terminal(TerminalState.CANCELED)
        error = timeout_error(self.facts.timeout)
        self.set_state(JobState.CANCELED, error.message)
        return Terminal(TerminalState.CANCELED, error=error)

    def _cancelling(self) -> str:
        if self.timed_out:
            return "TIMEOUT: cancelling the running attempt"
        return "cancelling the running attempt"

    def _after_failure(self, error: ErrorInfo, *, now: float, grace: float) -> Terminal | None:
        self.current = None
        if self.cancel_requested:
            return self._canceled()
        self.failures += 1
        if error.permanent:
            self.set_state(
                JobState.FAILED, f"no restart can fix: {error.type}: {error.message}"[:500]
            )
            return Terminal(TerminalState.FAILED, error=error)
        delay = restart_delay(self.spec.restart_strategy, self.failures)
        if delay is None:
            allowed = restarts_allowed(self.spec.restart_strategy)
            self.set_state(
                JobState.FAILED,
                f"attempt failed and the restart strategy allows {allowed} restart(s)",
            )
            return Terminal(TerminalState.FAILED, error=error)
        self.not_before = now + max(delay, grace)
        self.restart_at = time.time() + max(delay, grace)
        self.set_state(
            JobState.RESTARTING,
            f"restart {self.failures} of {restarts_allowed(self.spec.restart_strategy)}"
            f" in {max(delay, grace):.1f}s after: {error.type}: {error.message}"[:500],
        )
        return None

    def _finish_attempt(
        self, number: int, state: AttemptState, cause: ErrorInfo | None, at: float
    ) -> None:
        attempts.end(self.attempts, number, state, cause, at)
        if self.current is not None and self.current.number == number:
            self.current = None

    def _set_live(self, reason: str | None = None) -> None:
        if self.cancel_requested:
            self.set_state(JobState.CANCELLING, self._cancelling())
        else:
            self.set_state(JobState.RUNNING, reason)

    def set_state(self, state: JobState, reason: str | None) -> None:
        """The one place the job's state changes (also used by :mod:`.late_outcomes`)."""
        self.state = state
        self.reason = reason
        self.updated_at = time.time()
