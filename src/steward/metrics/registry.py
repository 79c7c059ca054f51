"""The pieces both sides share: a process's registry with its ZooKeeper round trips and its
scrape-time state (:class:`ProcessMetrics`), latency buckets, and the text exposition."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The classic Prometheus text format, what :func:`exposition` writes and every Prometheus
(2.x and 3.x) reads."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: from a ZooKeeper round trip (ms) to a scheduling delay or a recovery (a minute)."""

BACKOFF_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds a restart waits: a restart strategy's delays, up to its usual caps."""

STORAGE_OPERATIONS = ("put", "get", "delete", "exists", "list")
"""What a process asks of the blob storage (:class:`steward.store.blob.BlobStore`)."""

S = TypeVar("S")
Labels = tuple[str, Sequence[str]]
"""A counter's label and the values it takes."""


def new_registry() -> CollectorRegistry:
    """A registry of one process object, without the process-wide default collectors (which
    describe the interpreter, not the JobManager or TaskManager, and would repeat per object)."""
    return CollectorRegistry(auto_describe=True)


class SnapshotCollector(Collector, Generic[S]):
    """Reads ``snapshot()`` at each scrape and turns it into metrics with ``render``: state the
    process already keeps is never copied into gauges that could drift from it."""

    def __init__(self, snapshot: Callable[[], S], render: Callable[[S], Iterable[Metric]]) -> None:
        self._snapshot = snapshot
        self._render = render

    def collect(self) -> Iterable[Metric]:
        return list(self._render(self._snapshot()))

    def describe(self) -> Iterable[Metric]:
        return []  # the names depend on the state: checked at scrape time, not registration


class ProcessMetrics(Generic[S]):
    """The registry of one JobManager or TaskManager: the series both have (the liveness
    probe's round trips, the blob storage's failures) and the state read at scrape time
    through ``render``."""

    def __init__(self, render: Callable[[S], Iterable[Metric]]) -> None:
        self.registry: CollectorRegistry = new_registry()
        self._render = render
        self._state: SnapshotCollector[S] | None = None
        self.zookeeper_round_trip = self.histogram(
            "steward_zookeeper_round_trip_seconds",
            "Round trips of the liveness probe to ZooKeeper.",
            LATENCY_BUCKETS,
        )
        self.storage_errors = self.counter(
            "steward_storage_errors",
            "Operations on the blob storage that failed (unreachable, full, read-only, timed"
            " out), by operation; a missing blob is not counted.",
            by=("operation", STORAGE_OPERATIONS),
        )

    def counter(self, name: str, text: str, *, by: Labels | None = None) -> Counter:
        """A counter of this registry; ``by``: its label and every value it takes, each
        series made at once (increase() misses a counter's first step from nothing to 1,
        and the first failure is the one an alert must see)."""
        if by is None:
            return Counter(name, text, registry=self.registry)
        label, values = by
        counter = Counter(name, text, [label], registry=self.registry)
        for value in values:
            counter.labels(value)
        return counter

    def histogram(self, name: str, text: str, buckets: Sequence[float]) -> Histogram:
        return Histogram(name, text, buckets=buckets, registry=self.registry)

    def gauge(self, name: str, text: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, text, labels, registry=self.registry)

    def storage_failed(self, operation: str) -> None:
        """The blob storage refused ``operation`` (a :data:`STORAGE_OPERATIONS` name)."""
        self.storage_errors.labels(operation=operation).inc()

    def observe(self, snapshot: Callable[[], S]) -> None:
        """Read the process's state through ``snapshot`` at every scrape (in place of an
        earlier ``snapshot``: never two sets of the same series)."""
        if self._state is not None:
            self.registry.unregister(self._state)
        self._state = SnapshotCollector(snapshot, self._render)
        self.registry.register(self._state)


def exposition(registry: CollectorRegistry) -> bytes:
    """``registry`` in the Prometheus text format."""
    return generate_latest(registry)
