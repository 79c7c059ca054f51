"""The one interface the steps of an attempt report through: :class:`AttemptEvents`.

Execution (:mod:`.execution`: the lease and the process group) and reporting
(:mod:`.reporting`: what the leader hears) see an attempt end, its lease go and the attempt
be forgotten; the parts that react to that (the log archiver, the work directory's cleaner,
the warm spares, the metrics, the attempts' outcomes) are none of their business. They tell
this interface, which the TaskManager implements (:mod:`.manager`) by routing each event to
the parts it concerns: one object handed in, instead of one callback per event.

Each method runs on the thread of the part that calls it and must be short.
"""

from __future__ import annotations

from typing import Protocol

from steward.wire.runner_protocol import FinalEvent


class AttemptEvents(Protocol):
    """What execution and reporting tell the TaskManager about an attempt, in this order."""

    def attempt_exited(self, job_id: str, attempt: int, returncode: int | None) -> None:
        """Execution: the attempt's whole process group is gone (runner and Spark JVM);
        ``returncode`` is the runner's (negative: the signal that ended it)."""

    def outcome_of(self, job_id: str, attempt: int) -> FinalEvent | None:
        """Execution asks, after :meth:`attempt_exited`: the outcome to record with the
        lease's release (one multi-op), if known."""

    def attempt_released(self, job_id: str, attempt: int, recorded: bool) -> None:
        """Execution: the lease is no longer held by us; ``recorded``: the outcome record was
        created with its release."""

    def attempt_log_dropped(self, size: int) -> None:
        """Execution: an ended attempt's log capper dropped ``size`` bytes (told once it has
        drained, only when it dropped any)."""

    def attempt_forgotten(self, job_id: str, attempt: int, outcome_recorded: bool) -> None:
        """Reporting: its outcome acknowledged and its lease released, the attempt is
        forgotten (called under the attempts' lock)."""
