"""The graphs of jobs recovered from their records, read once the term is ready (issue 22).

Lazy recovery (:mod:`.recovery_job`: jobs adopted, or scheduled, from their records) keeps
graph blobs out of a takeover; this thread then reads them one job at a time, outside the
table's lock, so heartbeats and scheduling go on meanwhile. A graph found missing or corrupt
fails its job with recovery's cause, as recovery did before it was lazy (rule 6; seed 000):
the result is recorded, and an attempt still running is a stray, cancelled at its
TaskManager's next heartbeat. A store that does not answer is no verdict: that job is read
again later. A job whose graph was read first (its attempt ended, it was placed) costs
nothing here.
"""

from __future__ import annotations

import logging

from steward.errors import FencedError, StewardError
from steward.wire.jobs import JobSpec
from steward.wire.records import ErrorInfo

from .context import TermContext
from .jobmaster import JobMaster
from .records import Records

log = logging.getLogger(__name__)

PAUSE = 0.2
"""Seconds between two rounds over the jobs whose store did not answer."""


class AdoptedGraphs:
    """Reads every live job's graph not read yet, for one term."""

    def __init__(self, ctx: TermContext, records: Records) -> None:
        self._term, self._table = ctx.term, ctx.table
        self._records = records

    def run(self) -> None:
        with self._table.lock:
            todo = list(self._table.jobs)
        while todo and not self._term.stopped.is_set():
            todo = [job_id for job_id in todo if not self._check(job_id)]
            if todo:
                self._term.stopped.wait(PAUSE)

    def _check(self, job_id: str) -> bool:
        """Read ``job_id``'s graph if it was not; False if its store did not answer. The blob
        is read outside the lock (a takeover's thousands of reads held heartbeats and the
        scheduler back); the verdict is applied under it, to the same master only (a job that
        ended, or was read meanwhile, is left as it is)."""
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            reader = None if master is None else master.spec_at_hand.pending()
        if master is None or reader is None:
            return True
        try:
            answer: JobSpec | StewardError = reader()
        except StewardError as exc:
            answer = exc
        with self._table.lock:
            if self._table.jobs.get(job_id) is not master:
                return True
            try:
                verdict = master.spec_at_hand.take(answer)
            except StewardError as exc:
                log.warning("adopted job's graph not readable yet job=%s error=%r", job_id, exc)
                return False
            if verdict is not None:
                self._fail(master, verdict)
        return True

    def _fail(self, master: JobMaster, verdict: ErrorInfo) -> None:
        log.error("recovered job failed job=%s cause=%s", master.job_id, verdict.message)
        try:
            self._records.terminate(master, master.fail(verdict))
        except FencedError as exc:
            self._term.fenced(exc)
