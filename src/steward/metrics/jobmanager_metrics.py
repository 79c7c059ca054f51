"""A JobManager's metrics: leadership, jobs, attempts, latencies, ZooKeeper, TaskManagers.

Events are counted where they happen (one call in the leader's modules, through the term's
:class:`JobManagerMetrics`); state is read at scrape time from a :class:`JobManagerSnapshot`
the REST layer builds from the JobManager. Only the leader knows jobs, slots and heartbeats: a
standby exports its leadership gauges, its ZooKeeper session, and the counters of its past
terms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from .registry import BACKOFF_BUCKETS, LATENCY_BUCKETS, ProcessMetrics

TERMINAL_STATES = ("FINISHED", "FAILED", "CANCELED")
ATTEMPT_OUTCOMES = ("finished", "failed", "lost")
DOCTOR_SEVERITIES = ("error", "warning")
RATE_LIMIT_KINDS = ("auth-address", "auth-credential", "submissions")
"""steward.security.rate_limits.Kind's values (that layer is above this one)."""


@dataclass(frozen=True)
class TaskManagerSlots:
    """One TaskManager as the leader knows it."""

    slots: int
    used: int
    heartbeat_age: float | None
    """Seconds since its last heartbeat (None: none yet in this term)."""


@dataclass(frozen=True)
class QueueUse:
    """One queue as the leader's latest scheduling pass found it."""

    running: int
    waiting: int
    slots_used: int
    share: float
    """slots_used / all registered slots."""


@dataclass(frozen=True)
class JobManagerSnapshot:
    """What a JobManager knows at one scrape."""

    is_leader: bool
    leader_epoch: int | None
    """The epoch of the leader this JobManager knows of (None: no leader known)."""
    zookeeper_connected: bool
    jobs: Mapping[str, int] | None = None
    """Live jobs by state; None on a standby (or a leader still recovering)."""
    taskmanagers: Mapping[str, TaskManagerSlots] = field(default_factory=dict)
    queues: Mapping[str, QueueUse] = field(default_factory=dict)


class JobManagerMetrics(ProcessMetrics[JobManagerSnapshot]):
    """The registry of one JobManager and its event metrics."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(render_jobmanager)
        self._clock = clock
        self._lock = threading.Lock()
        self._heartbeats: dict[str, float] = {}
        self.leadership_grants = self.counter(
            "steward_leadership_grants", "Times this JobManager was granted leadership."
        )
        self.recovery_duration = self.histogram(
            "steward_recovery_duration_seconds",
            "From a grant of leadership to the term being ready (jobs recovered).",
            LATENCY_BUCKETS,
        )
        self.attempts_started = self.counter(
            "steward_attempts_started", "Attempts deployed (start command sent)."
        )
        self.attempts_ended = self.counter(
            "steward_attempts_ended",
            "Attempts that ended, by outcome: finished, failed, lost (their TaskManager gone).",
            by=("outcome", ATTEMPT_OUTCOMES),
        )
        self.attempts_adopted = self.counter(
            "steward_attempts_adopted",
            "Running attempts a new leader adopted from their lease during recovery.",
        )
        self.attempts_restarted = self.counter(
            "steward_attempts_restarted",
            "Restarts scheduled: after a failed attempt, or in recovery for a dead one.",
        )
        self.restart_backoff = self.histogram(
            "steward_restart_backoff_seconds",
            "How long a restart waits before its attempt (the restart strategy's delay).",
            BACKOFF_BUCKETS,
        )
        self.submission_latency = self.histogram(
            "steward_submission_duration_seconds",
            "Time the leader takes to accept a submission (graph stored, job recorded).",
            LATENCY_BUCKETS,
        )
        self.scheduling_latency = self.histogram(
            "steward_scheduling_latency_seconds",
            "From a job's submission to its first attempt's start command.",
            LATENCY_BUCKETS,
        )
        self.fenced_writes = self.counter(
            "steward_fenced_writes_rejected",
            "Writes ZooKeeper refused because a newer leader's epoch fenced this term.",
        )
        self.jobs_terminated = self.counter(
            "steward_jobs_terminated",
            "Jobs that reached a terminal state (their result recorded), by state.",
            by=("state", TERMINAL_STATES),
        )
        self.cleanup_retries = self.counter(
            "steward_cleanup_retries",
            "Cleanups of a terminated job's HA data that failed and are retried.",
        )
        self.zookeeper_lost_writes = self.counter(
            "steward_zookeeper_lost_writes",
            "Writes ZooKeeper acknowledged and later lost (a job's result gone before its"
            " cleanup ended): an incident of the ensemble, never expected.",
        )
        self.notifications = self.counter(
            "steward_notifications",
            "Job notifications' webhook calls, by outcome: delivered (2xx), retried (to be tried"
            " again), given_up (past notifications.max-age), dropped (the outbox was full).",
            by=("outcome", ("delivered", "retried", "given_up", "dropped")),
        )
        self.rate_limited = self.counter(
            "steward_rate_limited",
            "Requests answered 429 by a rate limit, by kind: auth-address and auth-credential"
            " (too many failed authentications), submissions (a team's jobs).",
            by=("kind", RATE_LIMIT_KINDS),
        )
        self.doctor_findings = self.gauge(
            "steward_doctor_findings",
            "Findings of the last `steward doctor` examination this JobManager made, by severity.",
            ["severity"],
        )
        self.doctor_examined_at = self.gauge(
            "steward_doctor_last_run_timestamp_seconds",
            "Unix time of the last `steward doctor` examination this JobManager made (0: none).",
        )

    # ------------------------------------------------------------------ events

    def limited(self, kind: str) -> None:
        """A request was refused by a rate limit of ``kind`` (steward.security.rate_limits)."""
        self.rate_limited.labels(kind=kind).inc()

    def doctor_examined(self, findings: Mapping[str, int], at: float) -> None:
        """An examination at Unix time ``at`` found ``findings`` (counts by severity)."""
        for severity in DOCTOR_SEVERITIES:
            self.doctor_findings.labels(severity=severity).set(findings.get(severity, 0))
        self.doctor_examined_at.set(at)

    def attempt_started(self, number: int, since_submission: float) -> None:
        """Attempt ``number`` was deployed; the first one's delay is the scheduling latency."""
        self.attempts_started.inc()
        if number == 1:
            self.scheduling_latency.observe(max(0.0, since_submission))

    def recovered(self, adopted: int, restarted: int) -> None:
        """A recovery's outcome: attempts adopted, jobs whose attempt must run again."""
        self.attempts_adopted.inc(adopted)
        self.attempts_restarted.inc(restarted)

    def attempt_ended(self, outcome: str) -> None:
        self.attempts_ended.labels(outcome=outcome).inc()

    def restart_scheduled(self, wait: float) -> None:
        self.attempts_restarted.inc()
        self.restart_backoff.observe(max(0.0, wait))

    def lost_writes(self) -> int:
        """How many acknowledged writes this JobManager found lost (``steward doctor`` says)."""
        value = self.registry.get_sample_value("steward_zookeeper_lost_writes_total")
        return int(value or 0)

    def heartbeat_from(self, tm_id: str) -> None:
        """A heartbeat of ``tm_id`` arrived (its age is read at scrape time)."""
        with self._lock:
            self._heartbeats[tm_id] = self._clock()

    def heartbeat_age(self, tm_id: str) -> float | None:
        with self._lock:
            last = self._heartbeats.get(tm_id)
        return None if last is None else max(0.0, self._clock() - last)


def render_jobmanager(snapshot: JobManagerSnapshot) -> Iterable[Metric]:
    """The scrape-time gauges of one :class:`JobManagerSnapshot`."""
    yield GaugeMetricFamily(
        "steward_jobmanager_is_leader",
        "1 on the JobManager that leads, 0 on a standby.",
        value=int(snapshot.is_leader),
    )
    if snapshot.leader_epoch is not None:
        yield GaugeMetricFamily(
            "steward_leader_epoch",
            "The epoch of the leader this JobManager knows of.",
            value=snapshot.leader_epoch,
        )
    yield GaugeMetricFamily(
        "steward_zookeeper_connected",
        "1 while the ZooKeeper session is connected.",
        value=int(snapshot.zookeeper_connected),
    )
    if snapshot.jobs is not None:
        jobs = GaugeMetricFamily(
            "steward_jobs", "Live jobs by state (leader only).", labels=["state"]
        )
        for state, count in sorted(snapshot.jobs.items()):
            jobs.add_metric([state], count)
        yield jobs
        yield from _slots(snapshot.taskmanagers)
        yield from _queues(snapshot.queues)


_QUEUE_GAUGES = (
    ("steward_queue_running", "Jobs of each queue with an attempt in flight.", "running"),
    ("steward_queue_waiting", "Jobs of each queue that want a slot and have none.", "waiting"),
    ("steward_queue_slots_used", "Slots held by each queue's attempts.", "slots_used"),
    ("steward_queue_share", "Each queue's share of all registered slots (0 to 1).", "share"),
)


def _queues(queues: Mapping[str, QueueUse]) -> Iterable[Metric]:
    for name, text, attribute in _QUEUE_GAUGES:
        gauge = GaugeMetricFamily(name, text, labels=["queue"])
        for queue, use in sorted(queues.items()):
            gauge.add_metric([queue], getattr(use, attribute))
        yield gauge


def _slots(taskmanagers: Mapping[str, TaskManagerSlots]) -> Iterable[Metric]:
    yield GaugeMetricFamily(
        "steward_taskmanagers", "TaskManagers the leader knows.", value=len(taskmanagers)
    )
    yield GaugeMetricFamily(
        "steward_slots_capacity",
        "Slots of all TaskManagers.",
        value=sum(tm.slots for tm in taskmanagers.values()),
    )
    yield GaugeMetricFamily(
        "steward_slots_used",
        "Slots taken by attempts.",
        value=sum(min(tm.used, tm.slots) for tm in taskmanagers.values()),
    )
    ages = GaugeMetricFamily(
        "steward_taskmanager_heartbeat_age_seconds",
        "Seconds since each TaskManager's last heartbeat reached the leader.",
        labels=["taskmanager"],
    )
    for tm_id, tm in sorted(taskmanagers.items()):
        if tm.heartbeat_age is not None:
            ages.add_metric([tm_id], tm.heartbeat_age)
    yield ages
