"""Jobs past their timeout: the leader cancels them, and their results say TIMEOUT.

Each scheduling pass asks the term's :class:`~.deadlines.Deadlines` which live jobs are due
(wall-clock time, as ``submitted_at`` is) and cancels each as a user's cancel would, marked
``timed_out``: the running attempt gets SIGTERM then SIGKILL, and the job ends CANCELED
with an error of type :data:`~steward.wire.job_options.TIMEOUT_ERROR_TYPE`. The mark is kept
in the job's status record, so a leader that takes over a CANCELLING job finishes it with the
same reason; one that takes over a job whose deadline passed meanwhile cancels it on its first
pass. A job already being cancelled at its deadline stays a user's cancel. Called under the
job table's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from steward.wire.job_options import describe_timeout

from .context import TermContext
from .jobmaster import JobMaster

log = logging.getLogger(__name__)

CancelLive = Callable[[JobMaster], None]
"""Cancel a live job as :meth:`~.submissions.Submissions.cancel_live` does."""


class Timeouts:
    def __init__(self, ctx: TermContext, cancel_live: CancelLive) -> None:
        self._term, self._table = ctx.term, ctx.table
        self._cancel_live = cancel_live

    def expire(self) -> None:
        """Cancel every live job whose deadline has passed."""
        for job_id in self._table.deadlines.due(self._term.wall()):
            master = self._table.jobs.get(job_id)
            # Ended (its result still being written: the outcome stands) or being cancelled.
            if master is None or master.state.is_terminal or master.cancel_requested:
                continue
            assert master.facts.timeout is not None  # only jobs with one have a deadline
            log.warning(
                "job timed out, cancelling job=%s timeout=%s state=%s epoch=%d",
                job_id,
                describe_timeout(master.facts.timeout),
                master.state,
                self._term.epoch,
            )
            master.timed_out = True
            self._cancel_live(master)
