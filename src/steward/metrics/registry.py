"""The pieces both sides share: a fresh registry, latency buckets, a scrape-time collector, and
the text exposition."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The classic Prometheus text format, what :func:`exposition` writes and every Prometheus
(2.x and 3.x) reads."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: from a ZooKeeper round trip (ms) to a scheduling delay or a recovery (a minute)."""

BACKOFF_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds a restart waits: a restart strategy's delays, up to its usual caps."""

S = TypeVar("S")


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


def exposition(registry: CollectorRegistry) -> bytes:
    """``registry`` in the Prometheus text format."""
    return generate_latest(registry)
