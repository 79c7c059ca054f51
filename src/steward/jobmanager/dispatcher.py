"""The Dispatcher: everything the leader does during one term of leadership.

Created when leadership is granted, stopped when it is revoked. It owns, for that term:

- recovery (DESIGN rules 6-8): resume the cleanups of DIRTY results; recover every job graph
  that has no result, each on its own (a job that cannot be recovered becomes FAILED with its
  cause, nothing else is affected); adopt the attempts whose execution lease still exists;
  run the initialize hook of the others, in a child process, before scheduling them;
- submissions, cancellations and the TaskManagers' heartbeats (reports in, commands out);
- scheduling (the ResourceManager's slots; no free slot means SCHEDULED with the reason);
- results and cleanup (rule 7): result entry DIRTY first, then the job's HA data, then CLEAN.

Every ZooKeeper write goes through the term's fence, so a deposed Dispatcher that has not yet
noticed cannot change anything: its first write fails with FencedError and it stops itself.
One lock guards the in-memory state; ZooKeeper calls made under it are single round trips.
Attempts running on TaskManagers are never touched by a stop: the next leader adopts them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kazoo.exceptions import KazooException

from steward.config import Configuration
from steward.errors import (
    FencedError,
    JobExistsError,
    JobNotFoundError,
    JobResultExistsError,
    NotReadyError,
    StewardError,
    ZooKeeperUnavailableError,
)
from steward.ha.election import Leadership
from steward.ha.session import Session
from steward.heartbeat import (
    Ack,
    AttemptPhase,
    AttemptReport,
    CancelAttempt,
    Heartbeat,
    HeartbeatReply,
    Rejection,
    StartAttempt,
    lost_outcome,
)
from steward.model import (
    CleanupStatus,
    CompletedCheckpoint,
    ErrorInfo,
    JobGraph,
    JobSpec,
    TaskManagerInfo,
)
from steward.runtime.protocol import FailedEvent, FinishedEvent, completed_stages_of
from steward.runtime.unpack import may_define_initialize
from steward.status import (
    CheckpointView,
    JobState,
    JobView,
    TaskManagerView,
)
from steward.store import zk
from steward.store.blob import BlobStore
from steward.store.checkpoints import CheckpointIDCounter
from steward.store.contents import ContentStore

from .content_gc import ContentCollector
from .hooks import HookRunner
from .jobmaster import JobMaster
from .leader.cleanup import Cleanup
from .leader.records import Records
from .leader.stores import LeaderStores, checkpoint_dir
from .leader.table import JobTable
from .leader.term import Term
from .reads import status_view

log = logging.getLogger(__name__)

_NOT_TAKEN = Rejection.NO_SLOT
"""How a start command that its TaskManager collected but never mentions is counted."""

TICK = 0.2
"""Seconds between scheduling passes when nothing wakes the scheduler earlier."""


class Dispatcher:
    def __init__(
        self,
        session: Session,
        leadership: Leadership,
        config: Configuration,
        *,
        blobs: BlobStore,
        jobmanager_id: str,
        hooks: HookRunner,
        on_fenced: Callable[[], None] = lambda: None,
    ) -> None:
        self.session = session
        self.epoch = leadership.epoch
        self.fence = leadership.fence
        self.config = config
        self.id = jobmanager_id
        self._term = Term.of(leadership, config, jobmanager_id, on_fenced)
        self.table = JobTable()
        self.stores = LeaderStores.open(session, blobs, config, jobmanager_id)
        # Content GC hook: the leader's collection of unreferenced files (content_gc.py).
        self.content_gc = ContentCollector(
            ContentStore(blobs), self.stores.graphs, retention=config.contents_retention
        )
        self._hooks = hooks
        self._cleanup = Cleanup(self._term, self.table, self.stores)
        self._term.when_stopped(self.table.rm.wake_all)
        self._term.when_stopped(hooks.cancel_all)
        self._records = Records(self._term, self.table, self.stores, self._cleanup, hooks)
        self._members_changed = threading.Event()
        self._threads: list[threading.Thread] = []
        self.recovery_summary: dict[str, int] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def ready(self) -> bool:
        return self._term.ready.is_set()

    @property
    def stopped(self) -> bool:
        return self._term.stopped.is_set()

    def start(self) -> Dispatcher:
        self.session.client.ChildrenWatch(self.session.layout.taskmanagers, self._on_members)
        for name, target in (
            ("recover", self._run),
            ("cleanup", self._cleanup.run),
            ("content-gc", lambda: self.content_gc.run(self._term.stopped)),  # content GC hook
        ):
            thread = threading.Thread(target=target, name=f"{self.id}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """End the term: stop scheduling and cleanup. Running attempts are left alone."""
        self._term.stop()

    def _on_members(self, _children: list[str]) -> bool:
        if self._term.stopped.is_set():
            return False
        self._members_changed.set()
        self._term.wakeup.set()
        return True

    # ------------------------------------------------------------------ recovery

    def _run(self) -> None:
        try:
            self._recover()
        except FencedError as exc:
            self._term.fenced(exc)
            return
        except Exception:
            log.exception("recovery failed epoch=%d; stepping down", self.epoch)
            self.stop()
            self._term.on_fenced()
            return
        self._term.ready.set()
        self._schedule_loop()

    def _recover(self) -> None:
        started = time.monotonic()
        self._refresh_members()
        entries = self.stores.results.entries()
        result_ids = {entry.job_id for entry in entries}
        dirty = 0
        for entry in entries:
            if entry.status is CleanupStatus.DIRTY:
                self._cleanup.put(entry.job_id)
                dirty += 1
        leases = self.stores.leases.all()
        graph_ids = self.stores.graphs.job_ids()
        leftovers = [job_id for job_id in graph_ids if job_id in result_ids]
        for job_id in leftovers:  # a result exists: only the cleanup was left to do
            self._cleanup.put(job_id)
        todo = [job_id for job_id in graph_ids if job_id not in result_ids]
        parallelism = int(self.config["jobmanager.recovery-parallelism"])
        self._records.defer()
        with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="recover") as pool:
            outcomes = list(pool.map(lambda j: self._recover_one(j, leases), todo))
        self._records.flush_deferred()
        self.recovery_summary = {
            "jobs": len(todo),
            "adopted": outcomes.count("adopted"),
            "awaiting": outcomes.count("awaiting"),
            "restarted": outcomes.count("restarted"),
            "failed": outcomes.count("failed"),
            "dirty_cleanups": dirty,
        }
        log.info(
            "recovery done epoch=%d seconds=%.3f %s",
            self.epoch,
            time.monotonic() - started,
            " ".join(f"{k}={v}" for k, v in self.recovery_summary.items()),
        )

    def _recover_one(self, job_id: str, leases: dict[str, Any]) -> str:
        """Recover one job; never raises for a problem of this job alone (rule 6)."""
        try:
            return self._recover_job(job_id, leases)
        except FencedError:
            raise
        except Exception as exc:
            log.exception("recovery of one job failed job=%s", job_id)
            with contextlib.suppress(FencedError, StewardError, KazooException, ValueError):
                error = ErrorInfo(
                    type="steward.RecoveryError",
                    message=f"job {job_id!r} could not be recovered: {exc!r}",
                )
                self._records.fail_unrecoverable(job_id, error)
            return "failed"

    def _recover_job(self, job_id: str, leases: dict[str, Any]) -> str:
        try:
            pointer, graph = self.stores.graphs.get_with_pointer(job_id)
        except JobNotFoundError:
            return "gone"  # removed meanwhile (cannot happen under our fence, but harmless)
        except FencedError:
            raise
        except StewardError as exc:
            error = ErrorInfo(
                type="steward.RecoveryError",
                message=f"job graph of {job_id!r} could not be recovered: {exc}",
            )
            self._records.fail_unrecoverable(job_id, error)
            return "failed"
        record = self.stores.statuses.find_quietly(job_id)
        master = JobMaster(graph.spec, pointer, graph.submitted_at, record=record)
        master.is_recovery = record is not None
        lease = leases.get(job_id)
        hookless = not may_define_initialize(graph.artifact)
        with self.table.lock:
            self.table.jobs[job_id] = master
            if hookless:
                self.table.hookless.add(job_id)
            if lease is not None:
                master.adopt(lease.taskmanager, lease.attempt, lease.epoch, self.epoch)
                self.table.rm.assign(lease.taskmanager, job_id, lease.attempt, graph.spec.slots)
                if master.cancel_requested:
                    self._send_cancel(master)
                self._records.persist(master)
                log.info(
                    "attempt adopted job=%s attempt=%d tm=%s lease_epoch=%d epoch=%d",
                    job_id,
                    lease.attempt,
                    lease.taskmanager,
                    lease.epoch,
                    self.epoch,
                )
                return "adopted"
            last = master.attempts[-1] if master.attempts else None
            if last is not None and not last.state.is_final:
                if self.table.rm.is_registered(last.taskmanager):
                    # Its lease is gone but its TaskManager lives: it may hold the outcome.
                    until = time.monotonic() + 3 * self.config.heartbeat_interval + 5.0
                    master.await_report(last.number, last.taskmanager, last.epoch, until)
                    self.table.rm.assign(last.taskmanager, job_id, last.number, graph.spec.slots)
                    return "awaiting"
                cause = ErrorInfo(
                    type="steward.TaskManagerLost",
                    message=f"TaskManager {last.taskmanager} left while the leader changed",
                )
                terminal = master.lost(last.number, cause, now=time.monotonic(), grace=self._grace)
                if terminal is not None:
                    self._records.terminate(master, terminal)
                    return "failed"
            if master.cancel_requested:
                self._records.settle(master, master.cancel())
                return "failed"
            self._start_initialize(master)
            return "restarted"

    # ------------------------------------------------------------------ submission

    def submit(self, spec: JobSpec, graph: JobGraph) -> JobView:
        """Persist a new job's graph and schedule it. Raises JobTerminatedError, JobExistsError."""
        self._term.check_ready()
        job_id = spec.job_id
        with self.table.lock:
            self._refuse_taken(job_id)
            self.table.submitting.add(job_id)
        try:
            # The blob is written outside the lock (it can be large); the pointer's create
            # fails for a second submission of the same id, so no two can both succeed.
            pointer = self.stores.graphs.put(self.fence, graph)
        except FencedError as exc:
            self._term.fenced(exc)
            raise
        except JobExistsError:
            self._take_up_orphan(job_id)
            raise
        finally:
            with self.table.lock:
                self.table.submitting.discard(job_id)
        hookless = not may_define_initialize(graph.artifact)
        with self.table.lock:
            master = JobMaster(spec, pointer, graph.submitted_at)
            self.table.jobs[job_id] = master
            if hookless:
                self.table.hookless.add(job_id)
            # _start_initialize persists the job's first record (one status write, not two).
            self._start_initialize(master)
            log.info("job submitted job=%s name=%r epoch=%d", job_id, spec.name, self.epoch)
            return self._view(master)

    def _take_up_orphan(self, job_id: str) -> None:
        """A pointer exists that this term has no JobMaster for: take the job up.

        It is our own earlier create whose answer was lost (ZooKeeper unreachable: the client
        got 503 and retried); without this the job would wait for the next failover's
        recovery. Called while ``job_id`` is in ``_submitting``, so nothing races it.
        """
        with self.table.lock:
            if job_id in self.table.jobs or job_id in self.table.pending_results:
                return
        log.warning("job graph found without a job master; recovering it job=%s", job_id)
        try:
            self._recover_one(job_id, self.stores.leases.all())
        except FencedError as exc:
            self._term.fenced(exc)
        except (StewardError, KazooException) as exc:  # the next failover recovers it
            log.warning("could not take up job=%s error=%r", job_id, exc)

    def _refuse_taken(self, job_id: str) -> None:
        existing = self.stores.results.find(job_id)
        if existing is not None:
            raise JobResultExistsError(existing)
        if job_id in self.table.jobs or job_id in self.table.submitting:
            raise JobExistsError(job_id, "running submission")

    def cancel(self, job_id: str) -> JobView:
        self._term.check_ready()
        with self.table.lock:
            master = self.table.jobs.get(job_id)
            if master is None:
                pending = self.table.pending_results.get(job_id)
                if pending is not None:
                    self._require_stored(pending.master)
                    return self._view(pending.master)
                result = self.stores.results.find(job_id)
                if result is not None:
                    raise JobResultExistsError(result)
                raise JobNotFoundError(job_id, "job")
            if master.cancel_requested:
                self._require_stored(master)
                return self._view(master)
            current = master.current
            terminal = master.cancel()
            self._hooks.cancel(job_id)
            if terminal is not None:
                self._records.terminate(master, terminal)
            elif current is not None:
                if not current.reported and self.table.rm.withdraw_start(
                    current.taskmanager, job_id, current.number
                ):
                    # Never collected by its TaskManager: nothing runs.
                    self.table.rm.release(current.taskmanager, job_id, current.number)
                    master.current = None
                    finished = master.cancel()
                    if finished is not None:
                        self._records.terminate(master, finished)
                else:
                    self._send_cancel(master)
                    self._records.persist(master)
            log.info("job cancel requested job=%s state=%s", job_id, master.state)
            self._require_stored(master)
            return self._view(master)

    def _require_stored(self, master: JobMaster) -> None:
        """Answer a cancel only once ZooKeeper holds it, so no next leader can lose it.

        Raises ZooKeeperUnavailableError (503: the client retries) while the job's status
        record or result could not be written; the retry writes it again.
        """
        job_id = master.job_id
        if self._term.stopped.is_set():  # fenced while writing it: the next leader decides
            raise NotReadyError("this JobManager is no longer the leader")
        if job_id in self.table.unpersisted:
            self.table.unpersisted.discard(job_id)
            self._records.persist(master)  # adds it back if ZooKeeper is still unreachable
        if job_id in self.table.unpersisted or job_id in self.table.pending_results:
            raise ZooKeeperUnavailableError(
                f"the cancel of job {job_id!r} is not stored yet: ZooKeeper is unreachable; retry"
            )

    def _send_cancel(self, master: JobMaster) -> None:
        current = master.current
        if current is None or current.cancel_sent:
            return
        current.cancel_sent = True
        grace = float(self.config["jobmanager.cancel-grace"])
        self.table.rm.enqueue(
            current.taskmanager,
            CancelAttempt(
                job_id=master.job_id, attempt=current.number, epoch=self.epoch, grace=grace
            ),
        )

    # ------------------------------------------------------------------ initialize hooks

    def _start_initialize(self, master: JobMaster) -> None:
        master.initializing()
        if master.job_id in self.table.hookless:
            # No hook can run: schedule now. Skipping the hook round saves a status write, a
            # blob read and a second trip through the lock per job (recovery is bound by it).
            self._records.settle(master, master.initialized(FinishedEvent()))
            self._term.wakeup.set()
            return
        self._records.persist(master)
        self._hooks.submit(
            master.job_id,
            master.pointer,
            checkpoint_dir(self.config, master.job_id),
            is_recovery=master.is_recovery,
            attempt=master.attempt_count + 1,
            epoch=self.epoch,
            on_done=self._initialized,
        )

    def _initialized(self, job_id: str, outcome: FinishedEvent | FailedEvent) -> None:
        with self.table.lock:
            master = self.table.jobs.get(job_id)
            if master is None or master.state is not JobState.INITIALIZING or self.stopped:
                return
            terminal = master.initialized(outcome)
            if terminal is not None:
                self._records.terminate(master, terminal)
            else:
                self._records.persist(master)
        self._term.wakeup.set()

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self, beat: Heartbeat) -> HeartbeatReply:
        """Take a TaskManager's reports; answer with acknowledgements and its commands."""
        with self.table.lock:
            state = self.table.rm.heartbeat(beat)
            acks: list[Ack] = []
            if self._term.ready.is_set() and not self._term.stopped.is_set():
                for report in beat.attempts:
                    acks.extend(self._on_report(beat.taskmanager, report))
                self._expire_uncollected(beat, state.assigned)
                commands = self.table.rm.take_commands(beat.taskmanager)
            else:
                commands = []
            wake = state.wake
        # Hold the reply (long poll) unless it carries something the TaskManager waits for:
        # commands, or acks of outcomes and checkpoints. Plain acks of running attempts do not
        # count, or a busy TaskManager would never be held.
        fresh = any(
            report.checkpoints or report.phase in (AttemptPhase.ENDED, AttemptPhase.REJECTED)
            for report in beat.attempts
        )
        if not commands and not fresh and beat.wait > 0 and not self._term.stopped.is_set():
            wake.wait(min(beat.wait, 30.0))
            with self.table.lock:
                if self._term.ready.is_set() and not self._term.stopped.is_set():
                    commands = self.table.rm.take_commands(beat.taskmanager)
        for command in commands:
            if isinstance(command, StartAttempt):
                self._mark_collected(command.job_id, command.attempt)
        return HeartbeatReply(epoch=self.epoch, leader=self.id, commands=commands, acks=acks)

    def _mark_collected(self, job_id: str, attempt: int) -> None:
        with self.table.lock:
            master = self.table.jobs.get(job_id)
            if master and master.current and master.current.number == attempt:
                master.current.collected_at = time.monotonic()

    def _expire_uncollected(self, beat: Heartbeat, assigned: dict[str, tuple[int, int]]) -> None:
        # A start command its TaskManager collected but never mentions (the reply was lost):
        # it never ran, so it is a rejection, not a failure. Only the attempts placed on this
        # TaskManager are looked at, so a heartbeat costs the same with 10 jobs or 10,000.
        listed = {(r.job_id, r.attempt) for r in beat.attempts}
        horizon = 2 * self.config.heartbeat_interval + 5.0
        now = time.monotonic()
        for job_id in list(assigned):
            master = self.table.jobs.get(job_id)
            current = master.current if master is not None else None
            if (
                master is None
                or current is None
                or current.taskmanager != beat.taskmanager
                or current.reported
                or current.collected_at is None
                or now - current.collected_at < horizon
                or (master.job_id, current.number) in listed
            ):
                continue
            log.warning(
                "start command lost job=%s attempt=%d tm=%s",
                master.job_id,
                current.number,
                beat.taskmanager,
            )
            self.table.rm.release(current.taskmanager, master.job_id, current.number)
            terminal = master.rejected(
                current.number,
                _NOT_TAKEN,
                "the TaskManager never took the attempt",
                now=now,
            )
            self._records.settle(master, terminal)

    def _on_report(self, tm_id: str, report: AttemptReport) -> list[Ack]:
        seq = max((c.seq for c in report.checkpoints), default=0)
        settled = report.phase in (AttemptPhase.ENDED, AttemptPhase.REJECTED)
        master = self.table.jobs.get(report.job_id)
        current = master.current if master else None
        if (
            master is None
            or current is None
            or current.number != report.attempt
            or current.taskmanager != tm_id
        ):
            # Not the attempt this job is waiting for: an old one, or one of a job that is
            # terminated or unknown. If it still runs, it must stop; either way, forget it.
            pending = self.table.pending_results.get(report.job_id)
            if pending is not None and settled:
                return []  # its outcome is being recorded: acknowledge once it is
            if not settled:
                self._cancel_stray(tm_id, report)
            return [
                Ack(
                    job_id=report.job_id,
                    attempt=report.attempt,
                    checkpoint_seq=seq,
                    outcome=settled,
                )
            ]
        assert master is not None
        if report.phase is AttemptPhase.REJECTED:
            self.table.rm.release(tm_id, master.job_id, report.attempt)
            terminal = master.rejected(
                report.attempt,
                report.rejection or _NOT_TAKEN,
                report.rejection_message or "refused",
                now=time.monotonic(),
            )
            self._records.settle(master, terminal)
            self._term.wakeup.set()
            return [Ack(job_id=report.job_id, attempt=report.attempt, outcome=True)]
        acked = self._record_checkpoints(master, report)
        if report.progress is not None:
            master.progress = report.progress
        app_changed = report.spark_app is not None and master.spark_app(
            report.attempt, report.spark_app
        )
        if report.phase is not AttemptPhase.ENDED:
            running = master.running(report.attempt, report.started_at)
            if running or app_changed or master.cancel_requested:
                if master.cancel_requested:
                    self._send_cancel(master)
                self._records.persist(master)
            return [Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=acked)]
        outcome = report.outcome or lost_outcome("the TaskManager reported no outcome")
        self.table.rm.release(tm_id, master.job_id, report.attempt)
        master.running(report.attempt, report.started_at)
        terminal = master.ended(report.attempt, outcome, now=time.monotonic())
        if terminal is not None:
            done = self._records.terminate(master, terminal)
        else:
            done = self._records.persist(master)
            self._term.wakeup.set()
        log.info(
            "attempt ended job=%s attempt=%d tm=%s outcome=%s job_state=%s",
            master.job_id,
            report.attempt,
            tm_id,
            outcome.event,
            master.state,
        )
        return [
            Ack(job_id=report.job_id, attempt=report.attempt, checkpoint_seq=acked, outcome=done)
        ]

    def _cancel_stray(self, tm_id: str, report: AttemptReport) -> None:
        state = self.table.rm.get(tm_id)
        key = f"{report.job_id}/{report.attempt}"
        if state is None or key in state.stray_cancelled:
            return
        state.stray_cancelled.add(key)
        log.warning(
            "cancelling a stray attempt job=%s attempt=%d tm=%s",
            report.job_id,
            report.attempt,
            tm_id,
        )
        self.table.rm.enqueue(
            tm_id,
            CancelAttempt(
                job_id=report.job_id,
                attempt=report.attempt,
                epoch=self.epoch,
                grace=float(self.config["jobmanager.cancel-grace"]),
            ),
        )

    def _record_checkpoints(self, master: JobMaster, report: AttemptReport) -> int:
        current = master.current
        assert current is not None
        for reported in sorted(report.checkpoints, key=lambda c: c.seq):
            if reported.seq <= current.checkpoint_acked:
                continue
            try:
                cid = CheckpointIDCounter(self.session, master.job_id).get_and_increment(self.fence)
                self.stores.checkpoints(master.job_id).add(
                    self.fence,
                    CompletedCheckpoint(
                        job_id=master.job_id,
                        checkpoint_id=cid,
                        attempt=report.attempt,
                        created_at=reported.event.at,
                        metadata=reported.event.metadata,
                    ),
                )
            except FencedError as exc:
                self._term.fenced(exc)
                break
            except (StewardError, KazooException) as exc:
                log.warning("checkpoint not recorded yet job=%s error=%r", master.job_id, exc)
                break
            current.checkpoint_acked = reported.seq
        return current.checkpoint_acked

    # ------------------------------------------------------------------ scheduling

    def _schedule_loop(self) -> None:
        while not self._term.stopped.is_set():
            self._term.wakeup.wait(TICK)
            self._term.wakeup.clear()
            if self._term.stopped.is_set():
                return
            try:
                if self._members_changed.is_set():
                    self._members_changed.clear()
                    self._refresh_members()
                with self.table.lock:
                    self._schedule_once()
            except FencedError as exc:
                self._term.fenced(exc)
                return
            except (StewardError, KazooException) as exc:
                log.warning("scheduling pass failed, retrying error=%r", exc)
            except Exception:
                log.exception("scheduling pass crashed, retrying")

    def _refresh_members(self) -> None:
        layout = self.session.layout
        members: dict[str, TaskManagerInfo] = {}
        for tm_id in zk.children(self.session.client, layout.taskmanagers):
            found = zk.read(self.session.client, layout.taskmanager(tm_id))
            if found is None:
                continue
            try:
                members[tm_id] = TaskManagerInfo.from_json(found[0])
            except StewardError as exc:
                log.warning("unreadable TaskManager registration tm=%s error=%s", tm_id, exc)
        with self.table.lock:
            gone = self.table.rm.set_members(members)
            for tm_id in gone:
                log.warning("taskmanager gone tm=%s", tm_id)
                self._taskmanager_lost(tm_id)

    def _taskmanager_lost(self, tm_id: str) -> None:
        now = time.monotonic()
        for master in list(self.table.jobs.values()):
            current = master.current
            if current is None or current.taskmanager != tm_id:
                continue
            if current.collected_at is None and not current.reported:
                # The start command never left this leader: nothing ran, nothing is spent.
                terminal = master.rejected(
                    current.number, _NOT_TAKEN, f"TaskManager {tm_id} left", now=now
                )
                self._records.settle(master, terminal)
                continue
            cause = ErrorInfo(
                type="steward.TaskManagerLost",
                message=f"TaskManager {tm_id} lost its ZooKeeper session (and the attempt's"
                " lease) before the attempt reported an outcome",
            )
            terminal = master.lost(current.number, cause, now=now, grace=self._grace)
            self._records.settle(master, terminal)

    @property
    def _grace(self) -> float:
        return self._term.replacement_grace

    def _schedule_once(self) -> None:
        now = time.monotonic()
        self._records.retry_unwritten()
        for master in sorted(self.table.jobs.values(), key=lambda m: m.submitted_at):
            current = master.current
            if (
                current is not None
                and current.await_report_until is not None
                and now > current.await_report_until
            ):
                self.table.rm.release(current.taskmanager, master.job_id, current.number)
                cause = ErrorInfo(
                    type="steward.AttemptLost",
                    message=f"TaskManager {current.taskmanager} no longer knows attempt"
                    f" {current.number}",
                )
                terminal = master.lost(current.number, cause, now=now, grace=self._grace)
                if terminal is not None:
                    self._records.terminate(master, terminal)
                    continue
                self._start_initialize(master)
                continue
            if master.wants_slot(now):
                self._deploy(master)

    def _deploy(self, master: JobMaster) -> None:
        tm_id = self.table.rm.allocate(master.spec.slots)
        if tm_id is None:
            if master.waiting(self.table.rm.shortage(master.spec.slots)):
                self._records.persist(master)
            return
        # Read before anything changes: if this read fails the pass is retried with the job
        # still waiting; failing after deploy() would strand it with no start command sent.
        latest = self.stores.checkpoints(master.job_id).latest().checkpoint
        metadata = latest.metadata if latest else None
        deployment = master.deploy(tm_id, self.epoch)
        self.table.rm.assign(tm_id, master.job_id, deployment.number, master.spec.slots)
        self._records.persist(master)
        self.table.rm.enqueue(
            tm_id,
            StartAttempt(
                job_id=master.job_id,
                attempt=deployment.number,
                epoch=self.epoch,
                job_graph_blob=master.pointer.blob,
                job_graph_sha256=master.pointer.sha256,
                checkpoint_dir=checkpoint_dir(self.config, master.job_id),
                is_recovery=master.is_recovery or deployment.number > 1,
                completed_stages=completed_stages_of(metadata),
                last_checkpoint=metadata,
            ),
        )
        log.info(
            "attempt deployed job=%s attempt=%d tm=%s epoch=%d",
            master.job_id,
            deployment.number,
            tm_id,
            self.epoch,
        )

    # ------------------------------------------------------------------ reads

    def view(self, job_id: str, *, with_checkpoints: bool = True) -> JobView | None:
        """The live job's view, or None if this leader has no such live job."""
        with self.table.lock:
            master = self.table.jobs.get(job_id)
            if master is None:
                pending = self.table.pending_results.get(job_id)
                master = pending.master if pending else None
            if master is None:
                return None
            view = self._view(master)
        if with_checkpoints:
            view = view.model_copy(update={"checkpoints": self._checkpoint_views(job_id)})
        return view

    def views(self) -> list[JobView]:
        with self.table.lock:
            return [self._view(m) for m in self.table.jobs.values()]

    def taskmanagers(self) -> list[TaskManagerView]:
        with self.table.lock:
            return self.table.rm.views()

    def _view(self, master: JobMaster) -> JobView:
        # The same view a standby builds from the persisted record, plus live progress.
        view = status_view(master.record(self.epoch), self.id)
        return view.model_copy(update={"progress": master.progress})

    def _checkpoint_views(self, job_id: str) -> list[CheckpointView]:
        store = self.stores.checkpoints(job_id)
        views = []
        try:
            for cid in store.checkpoint_ids():
                with contextlib.suppress(StewardError):
                    cp = store.get(cid)
                    views.append(
                        CheckpointView(
                            checkpoint_id=cp.checkpoint_id,
                            created_at=cp.created_at,
                            attempt=cp.attempt,
                            metadata=cp.metadata,
                        )
                    )
        except (StewardError, KazooException) as exc:
            log.warning("checkpoints unreadable job=%s error=%r", job_id, exc)
        return views


def new_job_id(stem: str = "job") -> str:
    return f"{stem}-{uuid.uuid4().hex[:12]}"
