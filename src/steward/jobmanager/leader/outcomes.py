"""Attempts' outcomes the leader learns other than by a timely report (issue 11).

Two ways an attempt's outcome could be lost, and what this module does about each:

- its TaskManager released the lease and died before its report arrived: the outcome was
  recorded with the release (:class:`~steward.wire.heartbeat.OutcomeRecord`, one multi-op), so
  before counting an attempt LOST the leader reads that record and settles the attempt from
  it (:meth:`AttemptOutcomes.lose`); a read that fails concludes nothing: the caller asks
  again (recovery retries the job, the scheduler's next pass the loss);
- its TaskManager was cut off, the attempt finished, and the leader counted it LOST at the
  session's expiry: the outcome arrives late, in a heartbeat once the partition heals, and a
  FINISHED one still wins while the job is live (:meth:`AttemptOutcomes.late_report`, the
  decision in :meth:`JobMaster.late_outcome`).

A late FINISHED is accepted only because it is safe: an attempt that finished on its own
ended before self-fencing could kill it (``fence-after`` < session timeout), so while it held
its lease, and a replacement starts only after the lease is gone plus a grace (rule 4):
the two never overlapped, and the first result is genuine. A FAILED outcome the TaskManager
made up after killing an attempt (self-fencing) only corrects the attempt's cause.

Called under the job table's lock; each call makes at most one ZooKeeper round trip.
"""

from __future__ import annotations

import logging

from steward.errors import FencedError, StewardError
from steward.store.outcomes import AttemptOutcomes as OutcomeStore
from steward.wire.heartbeat import Ack, AttemptReport
from steward.wire.records import ErrorInfo
from steward.wire.states import AttemptPhase

from .commands import send_cancel
from .context import TermContext
from .jobmaster import JobMaster
from .jobmaster_values import Late, Terminal
from .records import Records

log = logging.getLogger(__name__)


class AttemptOutcomes:
    """The leader's use of outcome records and of late outcomes, for one term."""

    def __init__(self, ctx: TermContext, records: Records) -> None:
        self._term, self._table = ctx.term, ctx.table
        self._store = OutcomeStore(ctx.stores.session)
        self._records = records

    # ------------------------------------------------------------------ lost attempts

    def lose(
        self, master: JobMaster, number: int, cause: ErrorInfo, *, now: float, grace: float
    ) -> Terminal | None:
        """Count attempt ``number`` LOST, unless its outcome was recorded with its lease's
        release: then it ended with that outcome (the lease went after its processes, so no
        grace is owed).

        Raises the store's StewardError if the record could not be read: nothing changed, and
        the caller asks again (a FINISHED outcome must not be lost to a blip).
        """
        record = self._store.find(master.job_id, number)  # a corrupt record reads as None
        self._term.metrics.attempt_ended(str(record.outcome.event) if record else "lost")
        if record is None:
            return self._table.lose(master, number, cause, now=now, grace=grace)
        log.warning(
            "attempt settled from its recorded outcome job=%s attempt=%d tm=%s outcome=%s",
            master.job_id,
            number,
            record.taskmanager,
            record.outcome.event,
        )
        terminal = self._table.end(master, number, record.outcome, now=now)
        if terminal is None:
            # The job goes on: drop the record now (a terminal job's goes with its cleanup).
            # Should the status write after this fail and the leader change, the attempt is
            # counted lost instead of failed: the same restart is spent either way.
            self.remove(master.job_id, number)
        return terminal

    def remove(self, job_id: str, number: int) -> None:
        """Remove an outcome record the job's status or result now holds (best effort: the
        job's cleanup removes what is left)."""
        try:
            self._store.remove(self._term.fence, job_id, number)
        except FencedError as exc:
            self._term.fenced(exc)
        except StewardError as exc:
            log.info("outcome record left for cleanup job=%s attempt=%d: %r", job_id, number, exc)

    # ------------------------------------------------------------------ late reports

    def late_report(self, master: JobMaster | None, report: AttemptReport) -> list[Ack] | None:
        """A settled report of an attempt that is not the one its job waits for: the acks if
        it is the late outcome of an attempt the job counted LOST, else None (a stray)."""
        if master is None or report.phase is not AttemptPhase.ENDED or report.outcome is None:
            return None
        verdict, terminal = master.late_outcome(report.attempt, report.outcome)
        if verdict is Late.IGNORED:
            return None
        log.log(
            logging.INFO if verdict is Late.PENDING else logging.WARNING,
            "late outcome of a lost attempt job=%s attempt=%d outcome=%s verdict=%s",
            master.job_id,
            report.attempt,
            report.outcome.event,
            verdict,
        )
        done = False
        if verdict is Late.CAUSE:
            done = self._records.persist(master)
        elif verdict is Late.FINISHED:
            assert terminal is not None
            done = self._records.terminate(master, terminal)
        elif verdict is Late.CANCEL_REPLACEMENT:
            send_cancel(self._term, self._table.rm, master)
            self._records.persist(master)
        # Otherwise not acknowledged yet: the TaskManager sends the outcome again until the
        # job's result holds it, so a leader change meanwhile cannot lose it.
        seq = max((c.seq for c in report.checkpoints), default=0)
        return [Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=seq, outcome=done)]
