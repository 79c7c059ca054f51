"""TaskManagers' heartbeats: their attempts' reports in, acknowledgements and commands out.

Each report about an attempt is taken by :mod:`.reports`. A start command its TaskManager
collected but never mentions is expired as a rejection.

A heartbeat is handled under the job table's lock; the long poll that holds an idle heartbeat
until a command is queued waits outside it (:mod:`.long_poll`). The common heartbeat, whose
reports change nothing that is stored, is taken without blocking (:meth:`Heartbeats.take`):
on the REST server's event loop, with no worker thread (issue 22).

An idle TaskManager's reports are the same every second. When taking a heartbeat's reports
left nothing to do again (every one quiet, none fresh), the leader keeps them with the digest
the TaskManager sent (:class:`~.resources.TakenReports`) and says so in the reply
(``taken``); the TaskManager then sends ``unchanged`` heartbeats without its reports until
they change. Such a heartbeat is answered without the table's lock while it would change
nothing but the TaskManager's liveness (:meth:`Heartbeats._idle`), and is otherwise taken as
the full heartbeat it stands for. A leader holds no reports it did not take itself: a new
leader (a new epoch), or one that forgot the TaskManager (its registration went), answers an
unchanged heartbeat with ``resend`` and takes nothing, and the TaskManager sends them in full
at once.

An idle TaskManager is held longer (``heartbeat.idle-hold``, :meth:`Heartbeats._hold`): a reply
that keeps its reports says how long (``idle_hold``), and its unchanged heartbeats ask that
long a wait. The leader grants more than ``heartbeat.interval`` only to a heartbeat whose
reports it keeps, while no start command its TaskManager collected is unreported: the expiry
of a start never taken (:meth:`Heartbeats._uncollected`) is judged on a heartbeat, and needs
one per interval while a start is in flight. Collecting a start sets the TaskManager's wake,
so a poll held before it ends at once and the next one is held an interval at most.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from steward.wire.heartbeat import Ack, Command, Heartbeat, HeartbeatReply, StartAttempt

from .context import TermContext
from .jobmaster import JobMaster
from .jobmaster_values import Deployment
from .long_poll import HeldHeartbeat, HeldUntaken, Wake
from .membership import NOT_TAKEN
from .records import Records
from .reports import SETTLED, AttemptReports
from .resources import TakenReports, TaskManagerState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Taken:
    """A heartbeat taken under the table's lock."""

    acks: list[Ack]
    commands: list[Command]
    wake: Wake | None
    """Set if the reply is to be held (long poll) on this TaskManager's wake."""
    hold: float
    """How long to hold it (:meth:`Heartbeats._hold`)."""
    stranger: int | None
    """The incarnation known, if the heartbeat came from another one."""
    digest: str | None
    """The digest of its reports, if this leader keeps them (:meth:`Heartbeats._keep`)."""


class Heartbeats:
    def __init__(
        self, ctx: TermContext, records: Records, on_stranger: Callable[[], None] = lambda: None
    ) -> None:
        """``on_stranger``: called when a heartbeat comes from another incarnation of a
        TaskManager than the membership last read (see :meth:`take`)."""
        self._term, self._table = ctx.term, ctx.table
        self._on_stranger = on_stranger
        self._records = records
        self._reports = AttemptReports(ctx, records)
        self._ready = Wake()
        """Set once the term is ready (:meth:`recovered`) or has ended: wakes the heartbeats
        held while it recovered."""
        ctx.term.when_stopped(self._ready.set)

    def recovered(self) -> None:
        """The term is ready: the heartbeats held while it recovered are taken now."""
        self._ready.set()

    def take(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        """Take a TaskManager's reports: the reply, or the reply held until a command is
        queued (long poll). With ``block`` False (on an event loop) None instead of waiting:
        the table's lock is held (maybe across a ZooKeeper round trip), or a report needs a
        write or a read (:meth:`_quiet`); the caller takes it again on a thread.

        While the term recovers, a heartbeat is held untaken (:class:`.long_poll.HeldUntaken`)
        until the term is ready, up to the hold a reply not kept gets (an interval): before
        "ready" no report is taken anyway, and taking the rest (the TaskManager's state, under
        the table's lock) against a table still filling only delayed the recovery and earned
        the TaskManager a reply with nothing in it (docs/architecture.md, "Heartbeats during
        a takeover")."""
        term = self._term
        if not (term.ready.is_set() or term.stopped.is_set()):
            hold = min(beat.wait, term.settings.taskmanager.heartbeat_interval)
            return HeldUntaken(self._ready, hold, lambda block: self._take_held(beat, block=block))
        return self._take_now(beat, block=block)

    def _take_held(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        """A heartbeat held while the term recovered: taken as any other once the term is
        ready (or over); if its hold ended first, answered with what a term not ready would
        answer (nothing taken, the epoch; ``resend`` for an unchanged one), without the
        table's lock, which the recovery needs."""
        term = self._term
        if term.ready.is_set() or term.stopped.is_set():
            return self._take_now(beat, block=block)
        return self._resend() if beat.unchanged else self._reply([], [], None)

    def _take_now(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        if beat.unchanged:
            return self._take_unchanged(beat, block=block)
        return self._take_full(beat, block=block)

    def _take_unchanged(
        self, beat: Heartbeat, *, block: bool
    ) -> HeartbeatReply | HeldHeartbeat | None:
        """A heartbeat that stands for the reports this leader last took from its TaskManager
        and said so (:attr:`TaskManagerState.taken`). While taking them again would still
        change nothing (:meth:`_idle`) it only renews the TaskManager's liveness, without the
        table's lock; otherwise it is taken as the full heartbeat it stands for. One this
        leader cannot match (it is new, or forgot the TaskManager or its reports) takes
        nothing and asks for the reports in full."""
        state = self._table.rm.get(beat.taskmanager)
        taken = state.taken if state is not None else None
        if state is None or taken is None or taken.digest != beat.digest:
            log.info("unchanged heartbeat not matched, asking again tm=%s", beat.taskmanager)
            return self._resend()
        full = beat.model_copy(update={"attempts": taken.attempts, "unchanged": False})
        if not self._idle(full, state):
            return self._take_full(full, block=block)
        state.last_heartbeat = time.monotonic()
        self._term.metrics.heartbeat_from(beat.taskmanager)
        if beat.wait > 0:
            return HeldHeartbeat(
                state.wake,
                self._hold(beat, state, kept=True),
                lambda block: self._finish_idle(full, state, block=block),
            )
        return self._reply([], [], taken.digest)

    def _idle(self, full: Heartbeat, state: TaskManagerState) -> bool:
        """Whether taking ``full`` (reports taken before) under the table's lock would only
        renew its TaskManager's liveness: the same address, slots and incarnation, no command
        queued, every report still quiet and no start command to expire. Read without the
        lock; when in doubt (a race with a writer), not idle."""
        term = self._term
        return (
            term.ready.is_set()
            and not term.stopped.is_set()
            and (full.address, full.slots) == (state.address, state.slots)
            and not _another_incarnation(full, state.registered, state.incarnation)
            and not state.commands
            and not state.wake.is_set()
            and all(self._reports.quiet(full.taskmanager, r) for r in full.attempts)
            and not self._uncollected(full, state.assigned)
        )

    def _finish_idle(
        self, full: Heartbeat, state: TaskManagerState, *, block: bool
    ) -> HeartbeatReply | None:
        """An idle heartbeat's held reply: without the lock unless a command was queued."""
        taken = state.taken
        digest = taken.digest if taken is not None and taken.digest == full.digest else None
        if state.commands or state.wake.is_set():
            return self._finish(full, [], digest, block=block)
        return self._reply([], [], digest)

    def _resend(self) -> HeartbeatReply:
        term = self._term
        return HeartbeatReply(epoch=term.epoch, leader=term.jobmanager_id, resend=True)

    def _take_full(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply | HeldHeartbeat | None:
        lock = self._table.lock
        if not lock.acquire(blocking=block):
            return None
        try:
            if not block and not self._quiet(beat):
                return None
            # Taken without blocking only if quiet: its reports stay quiet once taken.
            taken = self._take(beat, quiet=not block)
        finally:
            lock.release()
        if taken.stranger is not None:
            # The TaskManager restarted (a new session owns its registration) and the
            # membership watch has not told yet, or never will (kazoo swallows a delete and
            # re-create that happen while this leader is disconnected): read it again now.
            log.info(
                "heartbeat from another incarnation tm=%s session=0x%x known=0x%x",
                beat.taskmanager,
                beat.session or 0,
                taken.stranger,
            )
            self._on_stranger()
        acks, digest = taken.acks, taken.digest
        if taken.wake is not None:
            return HeldHeartbeat(
                taken.wake, taken.hold, lambda block: self._finish(beat, acks, digest, block=block)
            )
        return self._reply(taken.commands, acks, digest)

    def _take(self, beat: Heartbeat, *, quiet: bool) -> _Taken:
        term, table = self._term, self._table
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
        # Hold the reply (long poll) unless it carries something the TaskManager waits for:
        # commands, or acks of outcomes and checkpoints. Plain acks of running attempts do not
        # count, or a busy TaskManager would never be held.
        fresh = any(report.checkpoints or report.phase in SETTLED for report in beat.attempts)
        hold = not commands and not fresh and beat.wait > 0 and not term.stopped.is_set()
        self._mark_collected(beat, commands)
        digest = self._keep(beat, state, fresh=fresh, quiet=quiet)
        return _Taken(
            acks,
            commands,
            wake=state.wake if hold else None,
            hold=self._hold(beat, state, kept=digest is not None),
            stranger=(state.incarnation or 0) if stranger else None,
            digest=digest,
        )

    def _hold(self, beat: Heartbeat, state: TaskManagerState, *, kept: bool) -> float:
        """How long ``beat``'s reply may be held with nothing to say: up to the wait it asks,
        which is more than ``heartbeat.interval`` only for an idle TaskManager (``kept``: this
        leader keeps its reports). More than an interval only while no start command it
        collected is unreported: a lost one is expired on a heartbeat (:meth:`_uncollected`),
        and its bound counts on one per interval."""
        settings = self._term.settings.taskmanager
        if kept and not self._start_in_flight(beat.taskmanager, state.assigned):
            return min(beat.wait, settings.heartbeat_idle_hold)
        return min(beat.wait, settings.heartbeat_interval)

    def _start_in_flight(self, tm_id: str, assigned: dict[str, tuple[int, int]]) -> bool:
        """Whether a start command ``tm_id`` collected is not reported yet."""
        return next(self._collected_unreported(tm_id, assigned), None) is not None

    def _collected_unreported(
        self, tm_id: str, assigned: dict[str, tuple[int, int]]
    ) -> Iterator[tuple[JobMaster, Deployment]]:
        """The attempts placed on ``tm_id`` whose start it collected and has not reported yet.
        Only its own placements are looked at (a heartbeat costs the same with 10 jobs or
        10,000); read without the lock, over a copy of ``assigned``."""
        for job_id in list(assigned):
            master = self._table.jobs.get(job_id)
            current = master.current if master is not None else None
            if (
                master is not None
                and current is not None
                and current.taskmanager == tm_id
                and current.collected_at is not None
                and not current.reported
            ):
                yield master, current

    def _keep(
        self, beat: Heartbeat, state: TaskManagerState, *, fresh: bool, quiet: bool
    ) -> str | None:
        """Keep the reports just taken, if taking them again would change nothing (``quiet``:
        known to be, as they were before): their TaskManager may then send them as unchanged.
        The digest kept, or None."""
        term = self._term
        if (
            beat.digest is None
            or fresh
            or not term.ready.is_set()
            or term.stopped.is_set()
            or not (quiet or all(self._reports.quiet(beat.taskmanager, r) for r in beat.attempts))
        ):
            return None
        state.taken = TakenReports(beat.digest, beat.attempts)
        return beat.digest

    def _finish(
        self, beat: Heartbeat, acks: list[Ack], digest: str | None, *, block: bool
    ) -> HeartbeatReply | None:
        """A held heartbeat's reply: the commands queued meanwhile (None: see :meth:`take`)."""
        term, lock = self._term, self._table.lock
        if not lock.acquire(blocking=block):
            return None
        try:
            commands: list[Command] = []
            if term.ready.is_set() and not term.stopped.is_set():
                commands = self._table.rm.take_commands(beat.taskmanager)
            self._mark_collected(beat, commands)
        finally:
            lock.release()
        return self._reply(commands, acks, digest)

    def _reply(
        self, commands: list[Command], acks: list[Ack], digest: str | None
    ) -> HeartbeatReply:
        term = self._term
        return HeartbeatReply(
            epoch=term.epoch,
            leader=term.jobmanager_id,
            commands=commands,
            acks=acks,
            taken=digest,
            idle_hold=None if digest is None else term.settings.taskmanager.heartbeat_idle_hold,
        )

    def _mark_collected(self, beat: Heartbeat, commands: list[Command]) -> None:
        starts = [command for command in commands if isinstance(command, StartAttempt)]
        for command in starts:
            master = self._table.jobs.get(command.job_id)
            current = master.current if master else None
            if current and current.number == command.attempt:
                current.collected_at = self._term.monotonic()
                current.collected_seq = beat.seq
        wake = self._table.rm.wake_event(beat.taskmanager) if starts else None
        if wake is not None:
            # Ends a poll of this TaskManager held longer meanwhile (another of its threads
            # collected the start): its next one is held an interval at most (:meth:`_hold`).
            wake.set()

    def _quiet(self, beat: Heartbeat) -> bool:
        """Whether taking ``beat`` writes nothing and reads no store, so it may be taken on
        an event loop (under the lock). Mirrors :meth:`AttemptReports.take` and
        :meth:`_expire_uncollected`: the common heartbeat of attempts already known to be
        running, with no new checkpoint, Spark application or outcome, is quiet."""
        term = self._term
        if not term.ready.is_set() or term.stopped.is_set():
            return True
        if not all(self._reports.quiet(beat.taskmanager, report) for report in beat.attempts):
            return False
        state = self._table.rm.get(beat.taskmanager)
        return state is None or not self._uncollected(beat, state.assigned)

    def _expire_uncollected(self, beat: Heartbeat, assigned: dict[str, tuple[int, int]]) -> None:
        now = self._term.monotonic()
        for master, number in self._uncollected(beat, assigned):
            log.warning(
                "start command lost job=%s attempt=%d tm=%s",
                master.job_id,
                number,
                beat.taskmanager,
            )
            terminal = self._table.reject(
                master,
                number,
                NOT_TAKEN,
                "the TaskManager never took the attempt",
                now=now,
            )
            self._records.settle(master, terminal)

    def _uncollected(
        self, beat: Heartbeat, assigned: dict[str, tuple[int, int]]
    ) -> list[tuple[JobMaster, int]]:
        # A start command its TaskManager collected but never mentions (the reply was lost):
        # it never ran, so it is a rejection, not a failure. Only a heartbeat built after the
        # collecting reply was handled can tell: an older one may be taken up late (two
        # sending threads, a table lock held for seconds).
        listed = {(r.job_id, r.attempt) for r in beat.attempts}
        horizon = 2 * self._term.settings.taskmanager.heartbeat_interval + 5.0
        now = self._term.monotonic()
        return [
            (master, current.number)
            for master, current in self._collected_unreported(beat.taskmanager, assigned)
            if current.collected_at is not None
            and now - current.collected_at >= horizon
            and (master.job_id, current.number) not in listed
            and _built_after_collection(beat, current.collected_seq)
        ]


def _built_after_collection(beat: Heartbeat, collected_seq: int | None) -> bool:
    """Whether ``beat`` was built after its TaskManager handled (or gave up) the reply that
    carried a start: then it lists the attempt if the TaskManager admitted it. Unknown for a
    TaskManager that numbers no heartbeat: the time horizon alone decides, as it used to."""
    if collected_seq is None or beat.settled is None:
        return True
    return beat.settled >= collected_seq


def _another_incarnation(beat: Heartbeat, registered: bool, known: int | None) -> bool:
    return registered and None not in (beat.session, known) and beat.session != known
