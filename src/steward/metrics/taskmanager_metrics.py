"""A TaskManager's metrics: its slots, its attempts, its ZooKeeper session.

Its attempts and slots are read at scrape time from a :class:`TaskManagerSnapshot`; what
happened (attempts launched and ended, self-fencing, round trips) is counted as it happens.
Every series carries nothing but bounded labels (an outcome); which TaskManager it is comes
from Prometheus' ``instance`` label.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from .registry import ProcessMetrics


@dataclass(frozen=True)
class TaskManagerSnapshot:
    """What a TaskManager knows at one scrape."""

    slots: int
    used: int
    """Slots its attempts take now."""
    zookeeper_connected: bool
    fenced: bool
    """It fenced itself (no ZooKeeper round trip for ``taskmanager.fence-after``)."""


class TaskManagerMetrics(ProcessMetrics[TaskManagerSnapshot]):
    """The registry of one TaskManager and its event metrics."""

    def __init__(self) -> None:
        super().__init__(render_taskmanager)
        self.attempts_started = self.counter(
            "steward_taskmanager_attempts_started", "Attempts this TaskManager launched."
        )
        self.attempts_ended = self.counter(
            "steward_taskmanager_attempts_ended",
            "Attempts of this TaskManager that ended, by outcome.",
            by=("outcome", ()),
        )
        self.attempt_log_dropped = self.counter(
            "steward_taskmanager_attempt_log_dropped_bytes",
            "Bytes of attempts' output left out of their logs to keep them within"
            " taskmanager.attempt-log.max-size (or lost to a full disk).",
        )
        self.attempt_log_archive_failures = self.counter(
            "steward_taskmanager_attempt_log_archive_failures",
            "Failed tries to copy an ended attempt's log to the HA storage (each is retried;"
            " the local copy stays until one succeeds).",
        )
        self.self_fencings = self.counter(
            "steward_taskmanager_self_fencings",
            "Times this TaskManager fenced itself (ZooKeeper silent for fence-after).",
        )

    def attempt_ended(self, outcome: str) -> None:
        self.attempts_ended.labels(outcome=outcome).inc()


def render_taskmanager(snapshot: TaskManagerSnapshot) -> Iterable[Metric]:
    """The scrape-time gauges of one :class:`TaskManagerSnapshot`."""
    yield GaugeMetricFamily(
        "steward_taskmanager_slots", "Slots of this TaskManager.", value=snapshot.slots
    )
    yield GaugeMetricFamily(
        "steward_taskmanager_slots_used",
        "Slots taken by the attempts it runs.",
        value=min(snapshot.used, snapshot.slots),
    )
    yield GaugeMetricFamily(
        "steward_zookeeper_connected",
        "1 while the ZooKeeper session is connected.",
        value=int(snapshot.zookeeper_connected),
    )
    yield GaugeMetricFamily(
        "steward_taskmanager_fenced",
        "1 while this TaskManager has fenced itself.",
        value=int(snapshot.fenced),
    )
