"""The TaskManager process (``steward taskmanager``): runs the attempts the leader asks for.

This module wires the TaskManager's parts together and owns its reactions:

- start: ZooKeeper session, registration (``taskmanagers/<id>``), leader retrieval, the
  execution monitor, self-fencing (SUSPENDED/LOST events *and* the liveness probe), the
  heartbeats;
- a heartbeat reply: applied by :mod:`.admission` (a deposed leader's ignored; acks, then
  starts admitted at once and cancels); an admitted start is prepared and spawned on a launch
  worker (:mod:`.launches`), the lease taken before the spawn (rule 3);
- runner events and the execution monitor turn into the attempts' reports (progress,
  checkpoints, outcome once the whole group is gone, lease released);
- self-fencing (rule 4, :class:`~steward.taskmanager.self_fencing.Fence`): kill every
  attempt, report each ENDED as ``steward.SelfFenced``, refuse starts until a ZooKeeper round
  trip works again;
- a graceful stop: stop heartbeating, cancel then kill the attempts, wait for their groups and
  leases to go, deregister, close the session;
- warm spares (``taskmanager.spark.prewarm-runners``, :mod:`steward.taskmanager.spares`): an
  attempt whose job can use one is handed a spare where a cold runner would be spawned,
  after its lease is taken;
- disk use: each attempt's log is capped (``taskmanager.attempt-log.max-size``,
  :mod:`steward.supervisor.logcap`), and the folders of forgotten attempts and dead spares are
  removed after ``taskmanager.workdir.retention`` (:mod:`steward.taskmanager.workdir_cleaner`),
  never before the log is archived to the HA storage (:mod:`steward.taskmanager.log_archiver`).
- its HTTP port (:mod:`steward.taskmanager.http`): its attempts' logs, which JobManagers
  proxy, and its probes; its address is in the registration record.

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
from steward.errors import (
    ConfigurationError,
    StewardError,
)
from steward.ha.liveness import LivenessProbe
from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import ConnectionState, Session
from steward.metrics import TaskManagerMetrics, TaskManagerSnapshot
from steward.runtime import event_log
from steward.runtime.event_log import event_log_conf
from steward.security.credentials import internal_credential
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.store.log_archive import LogArchive
from steward.taskmanager.admission import Admission
from steward.taskmanager.execution import Executions
from steward.taskmanager.heartbeat_sender import HeartbeatSender
from steward.taskmanager.http.port import HttpPort
from steward.taskmanager.launches import Launches
from steward.taskmanager.log_archiver import LogArchiver
from steward.taskmanager.preparation import Preparation
from steward.taskmanager.registration import Registration
from steward.taskmanager.reporting import Attempt, Attempts
from steward.taskmanager.self_fencing import Fence, SelfFencing
from steward.taskmanager.spares import SparePool
from steward.taskmanager.workdir_cleaner import WorkdirCleaner, paths_in_use
from steward.tls.contexts import client_tls
from steward.wire.heartbeat import HeartbeatReply
from steward.wire.records import ErrorInfo, LeaderInfo, TaskManagerInfo
from steward.wire.runner import (
    FailedEvent,
    FinalEvent,
)

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
    """One TaskManager: ``start()``, then ``stop()`` (or let it be killed)."""

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
        self.attempts = Attempts(self.slots, on_forgotten=self._forgotten)
        self.metrics = TaskManagerMetrics()
        self.executions = Executions(
            self.leases,
            self._on_exit,
            on_released=self._released,
            outcome_of=self._outcome_of,
            on_log_dropped=self.metrics.attempt_log_dropped.inc,
        )
        self._log_max_size = settings.taskmanager.attempt_log_max_size
        self.fence = Fence(self.id, self.session, self.attempts, self.executions, self.metrics)
        self.metrics.observe(self._snapshot)
        # Its attempts' logs (and probes): bound now, so its address is in the registration.
        self.http = HttpPort(
            self.id,
            settings,
            session=self.session,
            attempts=self.attempts,
            workdir=self.workdir,
            ready=self.fence.not_ready,
            metrics=self.metrics,
        )
        blobs = BlobStore(settings.storage.storage_dir, on_error=self.metrics.storage_failed)
        self.archiver = LogArchiver(
            self.workdir,
            LogArchive(blobs),
            paths_in_use,
            on_failure=self.metrics.attempt_log_archive_failures.inc,
        )
        self.cleaner = WorkdirCleaner(
            self.workdir,
            settings.taskmanager.workdir_retention,
            self.http.noting_removals(self.attempts.unless_known),
            # A pool clears what earlier spares left when it starts (they died with their TM).
            include_spares=settings.taskmanager.prewarm_runners == 0,
            keep=self.archiver.holds,
        )
        self._event_log_dir = event_log.prepare(settings.history, settings.storage.storage_dir)
        self.spares: SparePool | None = None
        if settings.taskmanager.prewarm_runners > 0:
            self.spares = SparePool(
                limit=settings.taskmanager.prewarm_runners,
                spark_master=settings.spark.master,
                deadman_timeout=settings.taskmanager.deadman_timeout,
                folder=self.workdir / ".spares",
                free_slots=self._slots_without_runner,
                log_max_size=self._log_max_size,
                on_folder_done=self.cleaner.folder_ended,
                spark_defaults=event_log_conf(self._event_log_dir),
            )
        self.launches = Launches(
            tm_id=self.id,
            attempts=self.attempts,
            executions=self.executions,
            preparation=Preparation(config, blobs, self.workdir),
            spares=self.spares,
            metrics=self.metrics,
            fence=self.fence,
            log_max_size=self._log_max_size,
            workers=max(2, self.slots),
        )
        self.admission = Admission(
            attempts=self.attempts, leases=self.leases, fence=self.fence, launches=self.launches
        )
        self.registration = Registration(
            self.session,
            self.id,
            TaskManagerInfo(address=self.address, slots=self.slots, http_address=self.http.address),
        )
        self.retrieval = LeaderRetrieval(self.session, self._leader_changed)
        self.heartbeat_sender = HeartbeatSender(
            tm_id=self.id,
            address=self.address,
            slots=self.slots,
            interval=settings.taskmanager.heartbeat_interval,
            attempts=self.attempts,
            retrieval=self.retrieval,
            newest_epoch=lambda: self.leases.newest_epoch,
            on_reply=self.on_reply,
            credential=internal_credential(settings.security),
            tls=client_tls(settings.tls),
            session=lambda: self.session.session_id,
        )
        fence_after = settings.taskmanager.fence_after
        self.self_fencing = SelfFencing(self.session, fence_after, self.fence.fence)
        self.probe = LivenessProbe(self.session, fence_after, self.fence.fence, self.fence.alive)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> TaskManager:
        """Connect, register and start heartbeating; raises on a ZooKeeper that cannot be
        reached or an id another live TaskManager holds."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.session.start()
        self.http.start()
        try:
            self.registration.register(timeout=2 * self.session.session_timeout + 5.0)
        except StewardError:
            self.http.stop()
            self.session.close()
            raise
        self.registration.start()
        self.executions.start_monitor()
        # After registering: an earlier run's runners are dead or dying by now (rule 4),
        # and a folder a process still uses is left alone anyway. Its unarchived logs are
        # queued before the cleaner looks at their folders.
        self.archiver.scan_leftovers()
        self.archiver.start()
        self.cleaner.start()
        if self.spares is not None:
            self.spares.start()
        self.self_fencing.start()
        self.probe.start()
        self.session.add_listener(self._on_connection)
        self.retrieval.start()
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
        self.retrieval.stop()
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
        self.cleaner.stop()
        self.executions.close()
        self.registration.stop()
        self.registration.deregister()
        self.http.stop()
        self.session.close()
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

    # ------------------------------------------------------------------ attempts

    def _slots_without_runner(self) -> int:
        """Free slots, counting a starting attempt as free until its runner process exists:
        its spare must not be killed for want of a slot just before it is handed over."""
        taken = sum(
            a.slots
            for a in self.attempts.active()
            if a.runner is not None and a.runner.pid is not None
        )
        return self.slots - taken

    def _forgotten(self, attempt: Attempt) -> None:
        """Its outcome is acknowledged and its processes gone: its folder may go (later), and
        its outcome record (the leader holds the outcome now)."""
        self.cleaner.attempt_ended(attempt.job_id, attempt.attempt)
        if attempt.outcome_recorded:
            self.executions.drop_outcome_record(attempt.job_id, attempt.attempt)

    def _released(self, job_id: str, attempt_number: int, recorded: bool) -> None:
        self.attempts.released(job_id, attempt_number, outcome_recorded=recorded)
        if self.spares is not None:
            self.spares.wake()  # a slot is free again: warm its spare now

    # ------------------------------------------------------------------ attempts' ends

    def _outcome_of(self, job_id: str, attempt_number: int) -> FinalEvent | None:
        """An ended attempt's outcome, recorded with its lease's release (the monitor asks
        right after ``_on_exit`` settled it)."""
        attempt = self.attempts.get(job_id, attempt_number)
        return attempt.outcome if attempt is not None else None

    def _on_exit(self, job_id: str, attempt_number: int, returncode: int | None) -> None:
        """The execution monitor saw the attempt's whole process group gone."""
        attempt = self.attempts.get(job_id, attempt_number)
        if attempt is None or attempt.runner is None:
            log.warning("exit of an unknown attempt job=%s attempt=%d", job_id, attempt_number)
            return
        runner = attempt.runner
        outcome = runner.outcome(returncode)
        if runner.final is None and attempt.fenced_reason is not None:
            outcome = FailedEvent(
                error=ErrorInfo(type=SELF_FENCED_ERROR, message=attempt.fenced_reason)
            )
        self.metrics.attempt_ended(str(outcome.event))
        self.attempts.end(attempt, outcome)
        self.archiver.attempt_ended(job_id, attempt_number)

    # ------------------------------------------------------------------ self-fencing

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

    def _on_connection(self, state: ConnectionState) -> None:
        if state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED):
            self.heartbeat_sender.leader_changed()

    def _leader_changed(self, info: LeaderInfo | None) -> None:
        if info is None:
            log.warning("no leader known; attempts keep running tm=%s", self.id)
        else:
            log.info(
                "following leader tm=%s leader=%s address=%s epoch=%d",
                self.id,
                info.contender,
                info.address,
                info.epoch,
            )
        self.heartbeat_sender.leader_changed()
