"""Every state enum of Steward: a job's, an attempt's, a result's, and an attempt's phase as its
TaskManager reports it.
"""

from __future__ import annotations

import enum


class TerminalState(enum.StrEnum):
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class CleanupStatus(enum.StrEnum):
    DIRTY = "DIRTY"
    CLEAN = "CLEAN"


class AttemptState(enum.StrEnum):
    DEPLOYING = "DEPLOYING"
    """Sent to a TaskManager; not yet known to run."""
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    LOST = "LOST"
    """Its TaskManager died (or lost its session) before the attempt reported an outcome."""

    @property
    def is_final(self) -> bool:
        return self not in (AttemptState.DEPLOYING, AttemptState.RUNNING)


class JobState(enum.StrEnum):
    SUBMITTED = "SUBMITTED"
    INITIALIZING = "INITIALIZING"
    SCHEDULED = "SCHEDULED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    CANCELLING = "CANCELLING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    @classmethod
    def of(cls, terminal: TerminalState) -> JobState:
        return cls(terminal.value)


_TERMINAL = frozenset({JobState.FINISHED, JobState.FAILED, JobState.CANCELED})


class AttemptPhase(enum.StrEnum):
    STARTING = "STARTING"
    """Command accepted: fetching the job graph, taking the lease, spawning the runner."""
    RUNNING = "RUNNING"
    """The runner process group exists."""
    ENDED = "ENDED"
    """The whole process group is gone; ``outcome`` is set."""
    REJECTED = "REJECTED"
    """Never started: see ``rejection``. Spends no restart; the leader may try again later."""
