"""The graphs of jobs adopted from their records, read once the term is ready (issue 22).

Lazy adoption (:mod:`.recovery_job`) keeps graph blobs out of a takeover; this thread then reads
them one job at a time, the table's lock taken per job so heartbeats and scheduling go on
between two reads. A graph found missing or corrupt fails its job with recovery's cause, as
recovery did before the adoption was lazy (rule 6; seed 000): the result is recorded, and the
attempt still running is a stray, cancelled at its TaskManager's next heartbeat. A store that
does not answer is no verdict: that job is read again later. A job whose attempt ended first
had its graph read then (:meth:`JobMaster.read_graph`); reading it here costs nothing.
"""

from __future__ import annotations

import logging

from steward.errors import FencedError, StewardError

from .context import TermContext
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
        """Read ``job_id``'s graph if it was not; False if its store did not answer."""
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if master is None:
                return True
            try:
                verdict = master.read_graph()
            except StewardError as exc:
                log.warning("adopted job's graph not readable yet job=%s error=%r", job_id, exc)
                return False
            if verdict is not None:
                log.error("adopted job failed job=%s cause=%s", job_id, verdict.message)
                try:
                    self._records.terminate(master, master.fail(verdict))
                except FencedError as exc:
                    self._term.fenced(exc)
        return True
