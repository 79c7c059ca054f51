"""Which TaskManagers are members, and what the leader decides when one, or an attempt, is lost.

Membership is the ``taskmanagers/`` children in ZooKeeper: a TaskManager is alive exactly as
long as its session, which also owns its execution leases (rule 3). A watch wakes the
scheduler when they change; the scheduling pass then re-reads them. Loss lives here too:

- a TaskManager that left: its attempts are LOST (a restart is spent, and the replacement waits
  ``jobmanager.replacement-grace``, rule 4), except an attempt whose start command never left
  this leader (``Deployment.never_sent``): nothing ran, so it is a rejection. An attempt this
  leader inherited (adopted from its lease, or awaited) was sent by an earlier leader: LOST;
- a TaskManager restarted under the same id is another incarnation: its registration belongs
  to another ZooKeeper session (``ephemeralOwner``). The old incarnation left, with its
  session and so its leases, and its attempts are LOST as above, even though the id never
  disappeared from the membership the leader read;
- an attempt that recovery found without its lease, waiting for its TaskManager's report: when
  the wait is over with no report, the attempt is LOST.

Before an attempt is counted LOST its outcome record is read (:mod:`.outcomes`); if that read
fails, nothing is concluded and the scheduler's next pass reads it again.

Called under the job table's lock, except :meth:`Membership.refresh`'s ZooKeeper reads.
"""

from __future__ import annotations

import logging
import threading

from steward.errors import StewardError
from steward.ha.membership import watch_members
from steward.ha.session import ConnectionState
from steward.store import zk
from steward.wire.heartbeat import Rejection
from steward.wire.records import ErrorInfo, TaskManagerInfo

from .context import TermContext
from .initialization import Initialization
from .jobmaster import JobMaster
from .outcomes import AttemptOutcomes
from .records import Records

log = logging.getLogger(__name__)

NOT_TAKEN = Rejection.NO_SLOT
"""How a start command that never ran (never collected, or never mentioned) is counted."""


class Membership:
    def __init__(self, ctx: TermContext, records: Records, initialization: Initialization) -> None:
        self._term, self._table, self._session = ctx.term, ctx.table, ctx.stores.session
        self._records = records
        self._initialization = initialization
        self._outcomes = AttemptOutcomes(ctx, records)
        self._changed = threading.Event()

    def watch(self) -> None:
        """Follow ``taskmanagers/``: a change wakes the scheduler, which refreshes. So does a
        reconnection: kazoo's watch compares the children's names after one, so a TaskManager
        that left and came back under its id while this leader was disconnected looks
        unchanged to it."""
        watch_members(self._session, self._on_members)
        self._session.add_listener(self._on_connection)
        self._term.when_stopped(lambda: self._session.remove_listener(self._on_connection))

    def notice_change(self) -> None:
        """Refresh at the next scheduling pass (a heartbeat from an unknown incarnation)."""
        self._changed.set()
        self._term.wakeup.set()

    def _on_connection(self, state: ConnectionState) -> None:
        if state is ConnectionState.RECONNECTED and not self._term.stopped.is_set():
            self.notice_change()

    def _on_members(self, _children: list[str]) -> bool:
        if self._term.stopped.is_set():
            return False
        self.notice_change()
        return True

    def refresh_if_changed(self) -> None:
        """Refresh if the watch saw a change since the last refresh. A refresh that fails
        (ZooKeeper unreachable for a moment) is owed still: the next pass tries again, or a
        TaskManager that restarted meanwhile would keep its old incarnation's attempts."""
        if self._changed.is_set():
            self._changed.clear()
            try:
                self.refresh()
            except BaseException:
                self._changed.set()
                raise

    def refresh(self) -> None:
        """Read the members from ZooKeeper; the attempts of those that left are lost, and so
        are those of a TaskManager registered again under its id by a new process."""
        members, incarnations = self._read_members()
        with self._table.lock:
            gone = self._table.rm.set_members(members, incarnations)
            placed = self._jobs_placed_on(set(gone)) if gone else {}
            for tm_id in gone:
                log.warning("taskmanager gone tm=%s", tm_id)
                self._taskmanager_lost(tm_id, placed.get(tm_id, []))

    def _read_members(self) -> tuple[dict[str, TaskManagerInfo], dict[str, int]]:
        """The registrations, and the session that owns each (the TaskManager's incarnation)."""
        client, layout = self._session.client, self._session.layout
        members: dict[str, TaskManagerInfo] = {}
        incarnations: dict[str, int] = {}
        tm_ids = zk.children(client, layout.taskmanagers)
        paths = [layout.taskmanager(tm_id) for tm_id in tm_ids]
        # Pipelined: a thousand TaskManagers cost a round trip, not a thousand (recovery
        # and every membership change wait for this read).
        for tm_id, found in zip(tm_ids, zk.read_batched(client, paths), strict=True):
            if found is None:
                continue
            try:
                members[tm_id] = TaskManagerInfo.from_json(found[0])
            except StewardError as exc:
                log.warning("unreadable TaskManager registration tm=%s error=%s", tm_id, exc)
                continue
            incarnations[tm_id] = int(found[1].ephemeralOwner)
        return members, incarnations

    def _jobs_placed_on(self, tm_ids: set[str]) -> dict[str, list[JobMaster]]:
        """The jobs whose current attempt is on one of ``tm_ids``, by TaskManager: one pass
        over the table for all of them (a partition that takes 1,000 TaskManagers away at
        once must not cost 1,000 passes over 10,000 jobs under the lock)."""
        placed: dict[str, list[JobMaster]] = {}
        for master in self._table.jobs.values():
            current = master.current
            if current is not None and current.taskmanager in tm_ids:
                placed.setdefault(current.taskmanager, []).append(master)
        return placed

    def _taskmanager_lost(self, tm_id: str, masters: list[JobMaster]) -> None:
        now = self._term.monotonic()
        for master in masters:
            current = master.current
            if current is None or current.taskmanager != tm_id:
                continue
            if current.never_sent:
                # The start command never left this leader: nothing ran, nothing is spent.
                terminal = self._table.reject(
                    master, current.number, NOT_TAKEN, f"TaskManager {tm_id} left", now=now
                )
                self._records.settle(master, terminal)
                continue
            cause = ErrorInfo(
                type="steward.TaskManagerLost",
                message=f"TaskManager {tm_id} lost its ZooKeeper session (and the attempt's"
                " lease) before the attempt reported an outcome",
            )
            self._table.owe_loss(master, cause, now)
            self.expire_awaited_report(master, now, due=True)

    def expire_awaited_report(self, master: JobMaster, now: float, *, due: bool = False) -> bool:
        """An attempt recovery left waiting for a report: LOST once the wait is over (``due``:
        now). So is an attempt of a TaskManager that left (``Deployment.pending_loss``).

        True if the job was dealt with on this pass: the attempt was given up (the job is then
        terminated, restarting, or initialized again for its next attempt), or its outcome
        record could not be read, and the next pass asks again.
        """
        current = master.current
        if current is None or (current.await_report_until is None and not due):
            return False
        if not due and now <= (current.await_report_until or now):
            return False
        cause = current.pending_loss or ErrorInfo(
            type="steward.AttemptLost",
            message=f"TaskManager {current.taskmanager} no longer knows attempt {current.number}",
        )
        grace = self._term.replacement_grace
        try:
            terminal = self._outcomes.lose(master, current.number, cause, now=now, grace=grace)
        except StewardError as exc:
            # Its outcome may be FINISHED: conclude nothing from a failed read (issue 23).
            log.warning(
                "attempt outcome not readable yet job=%s attempt=%d error=%r",
                master.job_id,
                current.number,
                exc,
            )
            self._table.owe_loss(master, cause, now)
            return True
        if terminal is not None:
            self._records.terminate(master, terminal)
        elif current.pending_loss is not None:
            self._records.persist(master)  # RESTARTING: the scheduler deploys it
        else:
            self._initialization.start(master)
        return True
