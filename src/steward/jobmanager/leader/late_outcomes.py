"""The late-outcome rules of a :class:`~steward.jobmanager.leader.jobmaster.JobMaster`: how an
outcome reported after its attempt was counted LOST is judged.

- A FINISHED outcome wins while the job is live: an attempt that finished on its own did so
  before self-fencing could kill it, so while it held its lease, before any replacement could
  start (rule 4). With no attempt in flight the job finishes at once; with a replacement in
  flight, the replacement is cancelled and the job finishes with the late value once the
  replacement is gone, whatever the replacement's own end.
- A late FAILED outcome only corrects the attempt's recorded cause.
- An attempt the job does not remember as LOST, or a job already terminal, changes nothing.

The late value is kept in memory only (``JobMaster.late``): its TaskManager sends the outcome
again until the job's result is recorded, to this leader or the next.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from steward.wire.records import trim_cause
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptState, JobState, TerminalState

from . import jobmaster_attempts as attempts
from .jobmaster_values import Late, Terminal

if TYPE_CHECKING:
    from .jobmaster import JobMaster


def judge(
    master: JobMaster, number: int, outcome: FinishedEvent | FailedEvent
) -> tuple[Late, Terminal | None]:
    """What attempt ``number``'s late ``outcome`` changes in ``master`` (see the module
    docstring); the caller cancels the replacement on CANCEL_REPLACEMENT and records the
    terminal on FINISHED."""
    record = master.attempt(number)
    current = master.current
    if (
        record is None
        or record.state is not AttemptState.LOST
        or master.state.is_terminal
        or (current is not None and current.number == number)
    ):
        return Late.IGNORED, None
    if isinstance(outcome, FailedEvent):
        attempts.put(
            master.attempts, record.model_copy(update={"cause": trim_cause(outcome.error)})
        )
        return Late.CAUSE, None
    if master.late is not None:
        return Late.PENDING, None
    master.late = (number, outcome)
    if current is None:
        return Late.FINISHED, finish(master)
    master.updated_at = time.time()
    master.reason = (
        f"attempt {number} finished after it was counted lost; cancelling attempt {current.number}"
    )
    return Late.CANCEL_REPLACEMENT, None


def replaces_late(master: JobMaster, number: int) -> bool:
    """Attempt ``number`` is the replacement a late FINISHED outcome waits to see gone."""
    current = master.current
    return master.late is not None and current is not None and current.number == number


def finish(master: JobMaster) -> Terminal:
    """The replacement is gone (or there was none): the job ends with the late value."""
    assert master.late is not None
    number, outcome = master.late
    master.current = None
    attempts.end(master.attempts, number, AttemptState.FINISHED, None, outcome.at)
    master.set_state(JobState.FINISHED, f"attempt {number} finished after it was counted lost")
    return Terminal(TerminalState.FINISHED, value=outcome.value)
