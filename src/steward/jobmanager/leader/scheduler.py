"""Scheduling: the loop that places jobs that want a slot on the TaskManagers' free slots.

A pass runs every ``TICK`` or as soon as something wakes it (a submission, an outcome, a member
change). Each pass, under the job table's lock: write again what ZooKeeper refused before,
cancel the jobs past their timeout (:mod:`.timeouts`), give up attempts whose awaited report
never came, then deploy every job that wants a slot, oldest submission first. A job that finds
no free slot waits in SCHEDULED with the reason shown; it spends no restart (rule 9). A
deployment is persisted before its start command is queued, and the command carries the
term's epoch, which the TaskManager's lease checks (rule 3).
"""

from __future__ import annotations

import logging

from pydantic import JsonValue

from steward.errors import FencedError, StewardError
from steward.wire.heartbeat import StartAttempt
from steward.wire.records import MAX_EARLIER_APPS
from steward.wire.runner import completed_stages_of

from .jobmaster import JobMaster
from .jobmaster_values import Deployment
from .membership import Membership
from .records import Records
from .stores import LeaderStores, checkpoint_dir
from .table import JobTable
from .term import Term
from .timeouts import Timeouts

log = logging.getLogger(__name__)

TICK = 0.2
"""Seconds between scheduling passes when nothing wakes the scheduler earlier."""


class Scheduler:
    def __init__(
        self,
        term: Term,
        table: JobTable,
        stores: LeaderStores,
        records: Records,
        membership: Membership,
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        self._term = term
        self._table = table
        self._stores = stores
        self._records = records
        self._membership = membership
        self._timeouts = timeouts
        self._refused: dict[int, str] = {}
        """This pass's slot counts no TaskManager had room for, with the reason shown."""

    def run(self) -> None:
        """Scheduling passes until the term stops; a failed pass is retried, a fence ends it."""
        term = self._term
        while not term.stopped.is_set():
            term.wakeup.wait(TICK)
            term.wakeup.clear()
            if term.stopped.is_set():
                return
            try:
                self._membership.refresh_if_changed()
                with self._table.lock:
                    self.schedule_once()
            except FencedError as exc:
                term.fenced(exc)
                return
            except StewardError as exc:
                log.warning("scheduling pass failed, retrying error=%r", exc)
            except Exception:
                log.exception("scheduling pass crashed, retrying")

    def schedule_once(self) -> None:
        """One pass; called under the job table's lock."""
        now = self._term.monotonic()
        self._records.retry_unwritten()
        if self._timeouts is not None:
            self._timeouts.expire()
        waiting: list[JobMaster] = []
        self._refused.clear()
        for master in sorted(self._candidates(), key=_submitted_at):
            if self._membership.expire_awaited_report(master, now):
                self._refused.clear()  # an attempt given up may have freed its slots
                continue
            if master.wants_slot(now):
                self._deploy(master, waiting)
        # A burst of submissions waits for slots: their new reasons are written in batched
        # transactions, not one round trip each under the lock.
        self._records.persist_many(waiting)

    def _candidates(self) -> list[JobMaster]:
        """The jobs a pass may act on: those with no attempt in flight (they may want a slot)
        and those whose attempt awaits a report. A running attempt is neither, and at 10,000
        running jobs sorting and asking every one of them cost 19 ms under the lock per pass,
        five passes a second, heartbeats waiting meanwhile; this filter costs 2 ms."""
        return [
            master
            for master in self._table.jobs.values()
            if master.current is None or master.current.await_report_until is not None
        ]

    def _deploy(self, master: JobMaster, waiting: list[JobMaster]) -> None:
        rm, slots = self._table.rm, master.spec.slots
        tm_id = None if self._no_room(slots) else rm.allocate(slots)
        if tm_id is None:
            reason = self._refused.get(slots)
            if reason is None:
                reason = self._refused[slots] = rm.shortage(slots)
            if master.waiting(reason):
                waiting.append(master)
            return
        # The reasons name the free slots, which this deployment changes.
        self._refused.clear()
        # Read before anything changes: if this read fails the pass is retried with the job
        # still waiting; failing after deploy() would strand it with no start command sent.
        latest = self._stores.checkpoints(master.job_id).latest().checkpoint
        metadata = latest.metadata if latest else None
        deployment = master.deploy(tm_id, self._term.epoch)
        rm.assign(tm_id, master.job_id, deployment.number, master.spec.slots)
        self._records.persist(master)
        rm.enqueue(tm_id, self._start_command(master, deployment, metadata))
        self._term.metrics.attempt_started(
            deployment.number, self._term.wall() - master.submitted_at
        )
        log.info(
            "attempt deployed job=%s attempt=%d tm=%s epoch=%d",
            master.job_id,
            deployment.number,
            tm_id,
            self._term.epoch,
        )

    def _no_room(self, slots: int) -> bool:
        """Whether a pass already found no room for this many slots or fewer: within a pass,
        under the lock, free slots only shrink, so a burst of waiting jobs costs one search
        and one reason per slot count, not a search of every TaskManager per job."""
        return any(refused <= slots for refused in self._refused)

    def _start_command(
        self, master: JobMaster, deployment: Deployment, metadata: dict[str, JsonValue] | None
    ) -> StartAttempt:
        return StartAttempt(
            job_id=master.job_id,
            attempt=deployment.number,
            epoch=self._term.epoch,
            job_graph_blob=master.pointer.blob,
            job_graph_sha256=master.pointer.sha256,
            checkpoint_dir=checkpoint_dir(self._term.config, master.job_id),
            is_recovery=master.is_recovery or deployment.number > 1,
            completed_stages=completed_stages_of(metadata),
            last_checkpoint=metadata,
            earlier_spark_apps=earlier_spark_apps(master, deployment.number),
        )


def _submitted_at(master: JobMaster) -> float:
    return master.submitted_at


def earlier_spark_apps(master: JobMaster, number: int) -> list[str]:
    """The Spark applications recorded for the job's attempts before ``number``: the runner
    of attempt ``number`` kills those still on a standalone master (rule 4)."""
    ids = [a.spark_app.app_id for a in master.attempts if a.number < number and a.spark_app]
    return list(dict.fromkeys(ids))[-MAX_EARLIER_APPS:]
