"""What a :class:`~steward.jobmanager.leader.jobmaster.JobMaster` answers and keeps: a terminal
result to record, what it made of a late outcome, and the attempt in flight."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from steward.wire.records import ErrorInfo
from steward.wire.states import TerminalState
from steward.wire.values import JsonValue


@dataclass(frozen=True)
class Terminal:
    """The job is globally terminal: record this result."""

    state: TerminalState
    value: JsonValue = None
    error: ErrorInfo | None = None


class Late(enum.StrEnum):
    """What :meth:`JobMaster.late_outcome` made of an outcome sent after its attempt was lost."""

    IGNORED = "ignored"
    """Not an attempt this live job counted LOST (or no longer remembers): nothing changes."""
    CAUSE = "cause"
    """A late failure: the attempt's recorded cause is corrected; nothing else changes."""
    FINISHED = "finished"
    """No attempt was in flight: the job is FINISHED with the late value (see the terminal)."""
    CANCEL_REPLACEMENT = "cancel-replacement"
    """Cancel the attempt in flight; the job finishes with the late value once it is gone."""
    PENDING = "pending"
    """Already waiting for the replacement to go (a repeated report)."""


@dataclass
class Deployment:
    """The attempt in flight: sent to a TaskManager, running there, or being cancelled."""

    number: int
    taskmanager: str
    epoch: int
    deployed_at: float = field(default_factory=time.monotonic)
    reported: bool = False
    """A TaskManager has reported this attempt to the current leader."""
    cancel_sent: bool = False
    collected_at: float | None = None
    """When (monotonic) a heartbeat collected the start command."""
    collected_seq: int | None = None
    """The ``seq`` of the heartbeat that collected it (None: a TaskManager that numbers none)."""
    checkpoint_acked: int = 0
    await_report_until: float | None = None
    """Recovered without a lease: wait this long (monotonic) for its TaskManager's report."""
    pending_loss: ErrorInfo | None = None
    """Its TaskManager left, but its outcome record could not be read yet: the cause it is
    counted LOST with once read (if the record holds no outcome)."""
    inherited: bool = False
    """Found by this leader's recovery (adopted from its lease, or awaited), not deployed by it:
    it ran before this leader existed, so losing it is never "the start command never left"."""

    @property
    def never_sent(self) -> bool:
        """This leader's start command for it never left (nothing ran: losing it spends
        nothing); False once a TaskManager collected it or reported the attempt, and for an
        inherited attempt."""
        return self.collected_at is None and not self.reported and not self.inherited
