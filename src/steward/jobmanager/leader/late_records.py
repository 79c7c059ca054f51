"""The status records of jobs recovered from their records, rewritten once the term is ready
(issue 22).

A job adopted (or scheduled) from its lease and record (:mod:`.recovery_job`) changes nothing
in its record that a next leader needs: ``adopted_by`` gains this epoch, the record's epoch is
this term's, a waiting job's state and reason are the ones any leader would give it again.
Rewriting those records before the term was ready cost a third of a takeover at 1,000 jobs,
so they are written here, after "ready", a batch at a time: each record built under the
table's lock, written outside it, and only if its znode is still at the version recovery read
(rule 2's fence, plus a version check per record). A job whose record a transition of this
term wrote since holds all its master knows (``adopted_by`` included): it is skipped (not
even tried if that write came before the batch was built), so a late batch never overwrites
a newer record. If the term ends first, the next leader reads the records as they were and
recovers the same jobs the same way.
"""

from __future__ import annotations

import logging

from steward.errors import FencedError, StewardError
from steward.wire.records import JobStatusRecord

from .context import TermContext
from .records import Records

log = logging.getLogger(__name__)

BATCH = 500
"""Records built under one hold of the table's lock (written 50 a transaction by the store)."""
PAUSE = 0.2
"""Seconds before a batch whose store did not answer is tried again."""


class LateRecords:
    """Writes, for one term, the records :meth:`note` was given, once :meth:`run` is called."""

    def __init__(self, ctx: TermContext, records: Records) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._records = records
        self._todo: list[tuple[str, int]] = []

    def note(self, versions: dict[str, int]) -> None:
        """The jobs whose records to write (id: the version their recovery read)."""
        self._todo = sorted(versions.items())

    @property
    def pending(self) -> int:
        """Records not written yet (none once :meth:`run` returned)."""
        return len(self._todo)

    def run(self) -> None:
        started, skipped = self._term.monotonic(), 0
        total = len(self._todo)
        while self._todo and not self._term.stopped.is_set():
            batch = self._todo[:BATCH]
            written = self._write(batch)
            if written is None:
                self._term.stopped.wait(PAUSE)
                continue
            skipped += written
            del self._todo[:BATCH]
        if total:
            log.info(
                "recovery wrote records late epoch=%d seconds=%.3f records=%d skipped=%d",
                self._term.epoch,
                self._term.monotonic() - started,
                total,
                skipped,
            )

    def _write(self, batch: list[tuple[str, int]]) -> int | None:
        """Write ``batch``; how many were skipped (changed or gone), None if the store did
        not answer (then it is tried again: what was written meanwhile is skipped then)."""
        records = self._built(batch)
        try:
            changed = self._stores.statuses.write_many_unchanged(self._term.fence, records)
        except FencedError as exc:
            self._term.fenced(exc)
            return None
        except StewardError as exc:
            log.warning("late job records not written yet count=%d error=%r", len(batch), exc)
            return None
        return len(batch) - len(records) + len(changed)

    def _built(self, batch: list[tuple[str, int]]) -> list[tuple[JobStatusRecord, int]]:
        """The records of the batch's jobs still live and not written since recovery, as
        their masters hold them now. Skipping those a transition wrote is only a saving (one
        failed transaction per such record): the version check is what makes it safe."""
        epoch = self._term.epoch
        with self._table.lock:
            late = self._records.take_late([job_id for job_id, _version in batch])
            return [
                (master.record(epoch), version)
                for job_id, version in batch
                if job_id in late and (master := self._table.jobs.get(job_id)) is not None
            ]
