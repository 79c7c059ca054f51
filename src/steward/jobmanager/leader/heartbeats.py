"""TaskManagers' heartbeats: their attempts' reports in, acknowledgements and commands out.

Each report about an attempt is taken by :mod:`.reports`. A start command its TaskManager
collected but never mentions is expired as a rejection.

A heartbeat is handled under the job table's lock; the long poll that holds an idle heartbeat
until a command is queued waits outside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from steward.wire.heartbeat import Ack, Command, Heartbeat, HeartbeatReply, StartAttempt

from .context import TermContext
from .jobmaster import JobMaster
from .membership import NOT_TAKEN
from .records import Records
from .reports import SETTLED, AttemptReports

log = logging.getLogger(__name__)


class Heartbeats:
    def __init__(
        self, ctx: TermContext, records: Records, on_stranger: Callable[[], None] = lambda: None
    ) -> None:
        """``on_stranger``: called when a heartbeat comes from another incarnation of a
        TaskManager than the membership last read (see :meth:`heartbeat`)."""
        self._term, self._table = ctx.term, ctx.table
        self._on_stranger = on_stranger
        self._records = records
        self._reports = AttemptReports(ctx, records)

    def heartbeat(self, beat: Heartbeat) -> HeartbeatReply:
        """Take a TaskManager's reports; answer with acknowledgements and its commands."""
        term, table = self._term, self._table
        with table.lock:
            state = table.rm.heartbeat(beat)
            stranger = _another_incarnation(beat, state.registered, state.incarnation)
            term.metrics.heartbeat_from(beat.taskmanager)
            acks: list[Ack] = []
            commands: list[Command] = []
            if term.ready.is_set() and not term.stopped.is_set():
                news: dict[str, JobMaster] = {}
                for report in beat.attempts:
                    acks.extend(self._reports.take(beat.taskmanager, report, news))
                # One batched write for the whole heartbeat, not a round trip per attempt
                # under the lock: after a failover every adopted attempt's first report is
                # news, and 10 writes in a row held each heartbeat (and every other one) for
                # seconds at 1,000 adopted jobs.
                self._records.persist_many(list(news.values()))
                self._expire_uncollected(beat, state.assigned)
                commands = table.rm.take_commands(beat.taskmanager)
            wake = state.wake
        if stranger:
            # The TaskManager restarted (a new session owns its registration) and the
            # membership watch has not told yet, or never will (kazoo swallows a delete and
            # re-create that happen while this leader is disconnected): read it again now.
            log.info(
                "heartbeat from another incarnation tm=%s session=0x%x known=0x%x",
                beat.taskmanager,
                beat.session or 0,
                state.incarnation or 0,
            )
            self._on_stranger()
        # Hold the reply (long poll) unless it carries something the TaskManager waits for:
        # commands, or acks of outcomes and checkpoints. Plain acks of running attempts do not
        # count, or a busy TaskManager would never be held.
        fresh = any(report.checkpoints or report.phase in SETTLED for report in beat.attempts)
        if not commands and not fresh and beat.wait > 0 and not term.stopped.is_set():
            wake.wait(min(beat.wait, 30.0))
            with table.lock:
                if term.ready.is_set() and not term.stopped.is_set():
                    commands = table.rm.take_commands(beat.taskmanager)
        for command in commands:
            if isinstance(command, StartAttempt):
                self._mark_collected(command.job_id, command.attempt, beat.seq)
        return HeartbeatReply(
            epoch=term.epoch, leader=term.jobmanager_id, commands=commands, acks=acks
        )

    def _mark_collected(self, job_id: str, attempt: int, seq: int | None) -> None:
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if master and master.current and master.current.number == attempt:
                master.current.collected_at = self._term.monotonic()
                master.current.collected_seq = seq

    def _expire_uncollected(self, beat: Heartbeat, assigned: dict[str, tuple[int, int]]) -> None:
        # A start command its TaskManager collected but never mentions (the reply was lost):
        # it never ran, so it is a rejection, not a failure. Only the attempts placed on this
        # TaskManager are looked at, so a heartbeat costs the same with 10 jobs or 10,000.
        # Only a heartbeat built after the collecting reply was handled can tell: an older one
        # may be taken up late (two sending threads, a table lock held for seconds).
        listed = {(r.job_id, r.attempt) for r in beat.attempts}
        horizon = 2 * self._term.settings.taskmanager.heartbeat_interval + 5.0
        now = self._term.monotonic()
        for job_id in list(assigned):
            master = self._table.jobs.get(job_id)
            current = master.current if master is not None else None
            if (
                master is None
                or current is None
                or current.taskmanager != beat.taskmanager
                or current.reported
                or current.collected_at is None
                or now - current.collected_at < horizon
                or (master.job_id, current.number) in listed
                or not _built_after_collection(beat, current.collected_seq)
            ):
                continue
            log.warning(
                "start command lost job=%s attempt=%d tm=%s",
                master.job_id,
                current.number,
                beat.taskmanager,
            )
            terminal = self._table.reject(
                master,
                current.number,
                NOT_TAKEN,
                "the TaskManager never took the attempt",
                now=now,
            )
            self._records.settle(master, terminal)


def _built_after_collection(beat: Heartbeat, collected_seq: int | None) -> bool:
    """Whether ``beat`` was built after its TaskManager handled (or gave up) the reply that
    carried a start: then it lists the attempt if the TaskManager admitted it. Unknown for a
    TaskManager that numbers no heartbeat: the time horizon alone decides, as it used to."""
    if collected_seq is None or beat.settled is None:
        return True
    return beat.settled >= collected_seq


def _another_incarnation(beat: Heartbeat, registered: bool, known: int | None) -> bool:
    return registered and None not in (beat.session, known) and beat.session != known
