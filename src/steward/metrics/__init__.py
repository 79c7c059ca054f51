"""Prometheus metrics of a JobManager and a TaskManager, served at ``GET /metrics``.

Each process object owns one :class:`~prometheus_client.CollectorRegistry` (never the global
one: tests run several JobManagers and TaskManagers in one interpreter). What the process
already knows (jobs by state, slots, leadership) is read at scrape time by a custom collector;
only events (attempts started, grants, fenced writes...) are counted as they happen. No metric
has a job-id label; a TaskManager-id label appears only on per-TaskManager gauges.
"""

from .jobmanager_metrics import JobManagerMetrics, JobManagerSnapshot
from .registry import CONTENT_TYPE, exposition
from .taskmanager_metrics import TaskManagerMetrics, TaskManagerSnapshot

__all__ = [
    "CONTENT_TYPE",
    "JobManagerMetrics",
    "JobManagerSnapshot",
    "TaskManagerMetrics",
    "TaskManagerSnapshot",
    "exposition",
]
