"""The result check before every new attempt (rule 7: a job with a result is never started).

:meth:`JobTable.place <steward.jobmanager.leader.table.JobTable.place>` places no attempt of a
job that the term has not *cleared*: read, since its grant, to have no result in
``results/<job-id>``. This module is what reads. A job found to have a result is settled as
recovery settles one (it leaves the table, its cleanup is queued), never started.

Once per job and term is enough, and the read and the placement need not share a hold of the
table's lock (docs/architecture.md, "The result check"): after the grant the only writer of a
result is this term (rule 2 fences every earlier leader out), and this term writes one only
through a transition of the job in its table, which ends the job there (it leaves the table,
or stays terminal while its write is retried); so a live job cleared once has no result for
as long as it is live, and a result found was written before the grant, by an earlier leader,
for an attempt that existed then. A read made on the term's session after the grant sees
every write committed before it (ZooKeeper: a session's reads follow its own writes, the
epoch's compare-and-set among them).

Who clears: recovery, for the jobs whose result its listing looked up (those without a
lease); this module, for every other job: one batched read per scheduling pass for the
waiting jobs not cleared yet, and one read for a job placed beyond that batch. Called under
the table's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .context import TermContext
from .jobmaster import JobMaster
from .records import Records

log = logging.getLogger(__name__)

READ_AHEAD = 1000
"""Waiting jobs not cleared yet whose results one pass reads at most, in one batch; a job placed
beyond them is read on its own."""


class ResultCheck:
    def __init__(self, ctx: TermContext, records: Records) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._records = records

    def clear(self, masters: Sequence[JobMaster], most: int = READ_AHEAD) -> list[JobMaster]:
        """``masters`` but those found to have a result, which are settled. Of the jobs not
        cleared yet, the first ``most`` are read (one batched read) and cleared if they have
        none; the rest stay as they were. A store that does not answer raises StewardError,
        nothing changed."""
        table = self._table
        unread = [m.job_id for m in masters if m.job_id not in table.cleared][:most]
        if not unread:
            return list(masters)
        found = self._stores.results.with_result(unread)
        for job_id in unread:
            if job_id not in found:
                table.clear_of_results(job_id)
        kept = []
        for master in masters:
            if master.job_id in found:
                self._settle(master)
            else:
                kept.append(master)
        return kept

    def cleared(self, master: JobMaster) -> bool:
        """Whether ``master`` may have an attempt placed: cleared now if it was not (one read);
        settled if it has a result. StewardError if the store does not answer."""
        return bool(self.clear([master])) and master.job_id in self._table.cleared

    def _settle(self, master: JobMaster) -> None:
        log.warning(
            "job has a result already: settled, not started job=%s epoch=%d",
            master.job_id,
            self._term.epoch,
        )
        self._records.already_ended(master)
