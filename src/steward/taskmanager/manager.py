"""The TaskManager process (``steward taskmanager``): runs the attempts the leader asks for.

This module is the TaskManager's composition root: it builds the parts, starts and stops them
in order, and routes the attempts' events (:class:`~steward.taskmanager.events.AttemptEvents`)
to the parts they concern. A start command goes through the steps, one module each:

1. admission (:mod:`.admission`, on the heartbeat's thread): a deposed leader's reply ignored,
   acks applied, a start admitted or refused at once, a cancel passed on;
2. preparation (:mod:`.launches` on a launch worker, :mod:`.preparation`): the job graph, its
   artifact, files and Python environment, the launch document, the slots of its job;
3. execution (:mod:`.execution`): the lease taken, then a warm spare (:mod:`.spares`) or a cold
   runner spawned (rule 3); its end seen once its whole process group is gone, the lease
   released with the outcome recorded; self-fencing kills it all (rule 4, :mod:`.self_fencing`);
4. reporting (:mod:`.reporting`, sent by :mod:`.heartbeat_sender`): phases, progress,
   checkpoints and the outcome until acknowledged; then the attempt is forgotten, its outcome
   record dropped and its folder removed after ``taskmanager.workdir.retention``
   (:mod:`.workdir_cleaner`), never before its log is archived (:mod:`.log_archiver`).

Around them: the registration (``taskmanagers/<id>``), the lock on its own folder
(:mod:`.folder_lock`) and the takeover of gone TaskManagers' folders (:mod:`.predecessors`),
the HTTP port (:mod:`.http`: attempts' logs and probes), and a graceful stop: stop
heartbeating, cancel then kill the attempts, wait for their groups and leases to go,
deregister, close the session.

A new leader changes nothing for running attempts: they are reported to it, and its reply
(with a newer epoch) adopts them (rule 8).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time

from steward.config import Configuration
from steward.errors import ConfigurationError, StewardError
from steward.ha.liveness import LivenessProbe
from steward.ha.session import Session
from steward.metrics import TaskManagerMetrics, TaskManagerSnapshot
from steward.security.credentials import internal_credential
from steward.sparkconf import event_log
from steward.sparkconf.event_log import event_log_conf
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.store.log_archive import LogArchive
from steward.taskmanager.admission import Admission
from steward.taskmanager.execution import Executions
from steward.taskmanager.folder_lock import FolderLock, lock_own
from steward.taskmanager.heartbeat_sender import HeartbeatSender
from steward.taskmanager.http.port import HttpPort
from steward.taskmanager.launches import Launches
from steward.taskmanager.log_archiver import LogArchiver
from steward.taskmanager.predecessors import Predecessors
from steward.taskmanager.preparation import Preparation
from steward.taskmanager.registration import Registration
from steward.taskmanager.reporting import Attempts
from steward.taskmanager.self_fencing import Fence, SelfFencing
from steward.taskmanager.spares import SparePool
from steward.taskmanager.workdir_cleaner import WorkdirCleaner, paths_in_use
from steward.tls.contexts import client_tls
from steward.wire.heartbeat import HeartbeatReply
from steward.wire.records import ErrorInfo, TaskManagerInfo
from steward.wire.runner_protocol import FailedEvent, FinalEvent

log = logging.getLogger(__name__)

SELF_FENCED_ERROR = "steward.SelfFenced"
_TM_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_STOP_KILL_WAIT = 10.0
_STOP_ARCHIVE_WAIT = 10.0  # at most; the rest are archived by a next start under this id


def default_id() -> str:
    """``tm-<hostname>-<pid>``, made a valid znode name."""
    host = re.sub(r"[^A-Za-z0-9_.\-]", "-", socket.gethostname().split(".")[0]) or "host"
    return f"tm-{host}-{os.getpid()}"[:128]


def check_id(tm_id: str) -> str:
    if not _TM_ID.fullmatch(tm_id):
        raise ConfigurationError(
            f"invalid TaskManager id {tm_id!r}: use 1-128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return tm_id


class TaskManager:
    """One TaskManager: ``start()``, then ``stop()`` (or let it be killed).

    It is the :class:`~steward.taskmanager.events.AttemptEvents` its attempts' execution and
    reporting tell what happened (the ``attempt_*`` methods and :meth:`outcome_of`).
    """

    def __init__(
        self, config: Configuration, tm_id: str | None = None, *, address: str | None = None
    ) -> None:
        self.config = config
        self.settings = settings = config.settings
        self.id = check_id(tm_id or default_id())
        self.address = address or socket.gethostname()
        self.slots = settings.taskmanager.slots
        self.workdir = (settings.taskmanager.workdir / self.id).resolve()
        self.session = Session.from_config(config, name=self.id)
        self.leases = ExecutionLeases(self.session, self.id)
        self.metrics = TaskManagerMetrics()
        self.attempts = Attempts(self.slots, events=self)
        self.executions = Executions(self.leases, events=self)
        self.fence = Fence(self.id, self.session, self.attempts, self.executions, self.metrics)
        self.metrics.observe(self._snapshot)
        blobs = BlobStore(settings.storage.storage_dir, on_error=self.metrics.storage_failed)
        # Its attempts' logs (and probes): bound now, so its address is in the registration.
        self.http = self._http_port()
        self.archiver = self._log_archiver(blobs)
        self.predecessors = self._predecessors(blobs)
        self._folder_lock: FolderLock | None = None
        self.cleaner = self._workdir_cleaner()
        self.spares = self._spare_pool()
        self.launches = self._launches(blobs)
        self.admission = Admission(
            attempts=self.attempts, leases=self.leases, fence=self.fence, launches=self.launches
        )
        info = TaskManagerInfo(
            address=self.address, slots=self.slots, http_address=self.http.address
        )
        self.registration = Registration(self.session, self.id, info)
        self.heartbeat_sender = self._heartbeat_sender()
        fence_after = settings.taskmanager.fence_after
        self.self_fencing = SelfFencing(self.session, fence_after, self.fence.fence)
        self.probe = LivenessProbe(self.session, fence_after, self.fence.fence, self.fence.alive)

    # ------------------------------------------------------------------ parts

    def _http_port(self) -> HttpPort:
        return HttpPort(
            self.id,
            self.settings,
            session=self.session,
            attempts=self.attempts,
            workdir=self.workdir,
            ready=self.fence.not_ready,
            metrics=self.metrics,
        )

    def _log_archiver(self, blobs: BlobStore) -> LogArchiver:
        return LogArchiver(
            self.workdir,
            LogArchive(blobs),
            paths_in_use,
            on_failure=self.metrics.attempt_log_archive_failures.inc,
        )

    def _predecessors(self, blobs: BlobStore) -> Predecessors:
        return Predecessors(
            self.settings.taskmanager.workdir.resolve(),
            self.id,
            self.session,
            LogArchive(blobs),
            paths_in_use,
            is_valid_id=lambda name: _TM_ID.fullmatch(name) is not None,
            on_failure=self.metrics.attempt_log_archive_failures.inc,
        )

    def _workdir_cleaner(self) -> WorkdirCleaner:
        return WorkdirCleaner(
            self.workdir,
            self.settings.taskmanager.workdir_retention,
            self.http.noting_removals(self.attempts.unless_known),
            # A pool clears what earlier spares left when it starts (they died with their TM).
            include_spares=self.settings.taskmanager.prewarm_runners == 0,
            keep=self.archiver.holds,
        )

    def _spare_pool(self) -> SparePool | None:
        settings = self.settings
        event_log_dir = event_log.prepare(settings.history, settings.storage.storage_dir)
        if settings.taskmanager.prewarm_runners == 0:
            return None
        return SparePool(
            limit=settings.taskmanager.prewarm_runners,
            spark_master=settings.spark.master,
            deadman_timeout=settings.taskmanager.deadman_timeout,
            folder=self.workdir / ".spares",
            free_slots=self.attempts.slots_without_runner,
            log_max_size=settings.taskmanager.attempt_log_max_size,
            on_folder_done=self.cleaner.folder_ended,
            spark_defaults=event_log_conf(event_log_dir),
        )

    def _launches(self, blobs: BlobStore) -> Launches:
        return Launches(
            tm_id=self.id,
            attempts=self.attempts,
            executions=self.executions,
            preparation=Preparation(self.config, blobs, self.workdir),
            spares=self.spares,
            metrics=self.metrics,
            fence=self.fence,
            log_max_size=self.settings.taskmanager.attempt_log_max_size,
            workers=max(2, self.slots),
        )

    def _heartbeat_sender(self) -> HeartbeatSender:
        settings = self.settings
        return HeartbeatSender(
            tm_id=self.id,
            address=self.address,
            slots=self.slots,
            interval=settings.taskmanager.heartbeat_interval,
            idle_hold=settings.taskmanager.heartbeat_idle_hold,
            progress_interval=settings.taskmanager.heartbeat_progress_interval,
            attempts=self.attempts,
            session=self.session,
            leases=self.leases,
            on_reply=self.admission.on_reply,
            credential=internal_credential(settings.security),
            tls=client_tls(settings.tls),
        )

    # ------------------------------------------------------------------ life cycle

    def start(self) -> TaskManager:
        """Connect, register and start heartbeating; raises on a ZooKeeper that cannot be
        reached or an id another live TaskManager holds."""
        # Held while this process lives: no other TaskManager takes this folder over.
        self._folder_lock = lock_own(self.workdir, 2 * self.settings.zookeeper.session_timeout)
        self.session.start()
        self.http.start()
        try:
            self.registration.register(timeout=2 * self.session.session_timeout + 5.0)
        except StewardError:
            self.http.stop()
            self.session.close()
            self._folder_lock.release()
            raise
        self.registration.start()
        self.executions.start_monitor()
        # After registering: an earlier run's runners are dead or dying by now (rule 4),
        # and a folder a process still uses is left alone anyway. Its unarchived logs are
        # queued before the cleaner looks at their folders.
        self.archiver.scan_leftovers()
        self.archiver.start()
        self.predecessors.start()
        self.cleaner.start()
        if self.spares is not None:
            self.spares.start()
        self.self_fencing.start()
        self.probe.start()
        self.heartbeat_sender.start()
        log.info(
            "taskmanager started tm=%s address=%s slots=%d workdir=%s fence_after=%.1fs"
            " deadman_timeout=%.1fs",
            self.id,
            self.address,
            self.slots,
            self.workdir,
            self.settings.taskmanager.fence_after,
            self.settings.taskmanager.deadman_timeout,
        )
        return self

    def stop(self, grace: float = 3.0) -> None:
        """Stop gracefully: no more heartbeats, attempts cancelled then killed, their groups
        gone and leases released, deregistered, session closed."""
        self.fence.stopping()
        log.info("taskmanager stopping tm=%s attempts=%d", self.id, len(self.attempts.active()))
        self.heartbeat_sender.stop()
        self.executions.refuse_starts("the TaskManager is stopping")
        self.launches.close()
        if self.spares is not None:
            self.spares.stop()
        for attempt in self.attempts.active():
            if attempt.runner is not None:
                attempt.runner.cancel(grace)
        if not self._wait_all_gone(grace + 1.0):
            self.executions.kill_all("taskmanager stopping")
            if not self._wait_all_gone(_STOP_KILL_WAIT):
                log.error("attempts or leases left behind on stop tm=%s", self.id)
        self.probe.stop()
        self.self_fencing.stop()
        self.archiver.stop(flush=_STOP_ARCHIVE_WAIT)
        self.predecessors.stop()
        self.cleaner.stop()
        self.executions.close()
        self.registration.stop()
        self.registration.deregister()
        self.http.stop()
        self.session.close()
        if self._folder_lock is not None:
            self._folder_lock.release()
        log.info("taskmanager stopped tm=%s", self.id)

    def _wait_all_gone(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.executions.running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    # ------------------------------------------------------------------ heartbeat replies

    def on_reply(self, reply: HeartbeatReply) -> None:
        """Apply a leader's reply (:mod:`.admission`)."""
        self.admission.on_reply(reply)

    # ------------------------------------------------------------------ AttemptEvents

    def attempt_exited(self, job_id: str, attempt: int, returncode: int | None) -> None:
        """Its outcome settled (``steward.SelfFenced`` if fencing killed it before it had one),
        counted, and its log queued for the archive."""
        known = self.attempts.get(job_id, attempt)
        if known is None or known.runner is None:
            log.warning("exit of an unknown attempt job=%s attempt=%d", job_id, attempt)
            return
        runner = known.runner
        outcome = runner.outcome(returncode)
        if runner.final is None and known.fenced_reason is not None:
            outcome = FailedEvent(
                error=ErrorInfo(type=SELF_FENCED_ERROR, message=known.fenced_reason)
            )
        self.metrics.attempt_ended(str(outcome.event))
        self.attempts.end(known, outcome)
        self.archiver.attempt_ended(job_id, attempt)

    def outcome_of(self, job_id: str, attempt: int) -> FinalEvent | None:
        """The outcome :meth:`attempt_exited` settled, recorded with the lease's release."""
        known = self.attempts.get(job_id, attempt)
        return known.outcome if known is not None else None

    def attempt_released(self, job_id: str, attempt: int, recorded: bool) -> None:
        self.attempts.released(job_id, attempt, outcome_recorded=recorded)
        if self.spares is not None:
            self.spares.wake()  # a slot is free again: warm its spare now

    def attempt_log_dropped(self, size: int) -> None:
        self.metrics.attempt_log_dropped.inc(size)

    def attempt_forgotten(self, job_id: str, attempt: int, outcome_recorded: bool) -> None:
        """Its outcome is acknowledged and its processes gone: its folder may go (later), and
        its outcome record (the leader holds the outcome now)."""
        self.cleaner.attempt_ended(job_id, attempt)
        if outcome_recorded:
            self.executions.drop_outcome_record(job_id, attempt)

    # ------------------------------------------------------------------ state

    @property
    def fenced(self) -> bool:
        return self.fence.fenced

    def _snapshot(self) -> TaskManagerSnapshot:
        """What ``/metrics`` reads at each scrape."""
        return TaskManagerSnapshot(
            slots=self.slots,
            used=self.attempts.used_slots(),
            zookeeper_connected=self.session.connected,
            fenced=self.fenced,
        )
