"""deploy/grafana/steward-dashboard.json names only metrics Steward defines: every
``steward_...`` identifier of every panel's PromQL is a family (or a sample of one: a counter's
``_total``, a histogram's ``_bucket``/``_sum``/``_count``) of the JobManager's or the
TaskManager's registry."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from steward.metrics import (
    JobManagerMetrics,
    JobManagerSnapshot,
    TaskManagerMetrics,
    TaskManagerSnapshot,
)
from steward.metrics.jobmanager_metrics import TaskManagerSlots

DASHBOARD = Path(__file__).parents[3] / "deploy" / "grafana" / "steward-dashboard.json"
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def defined_names() -> set[str]:
    """Every series name the two registries can expose (state gauges of a leader included)."""
    jobmanager = JobManagerMetrics()
    jobmanager.observe(
        lambda: JobManagerSnapshot(
            is_leader=True,
            leader_epoch=3,
            zookeeper_connected=True,
            jobs={"RUNNING": 1},
            taskmanagers={"tm-1": TaskManagerSlots(slots=2, used=1, heartbeat_age=0.5)},
        )
    )
    taskmanager = TaskManagerMetrics()
    taskmanager.observe(lambda: TaskManagerSnapshot(2, 1, True, False))
    names = set()
    for registry in (jobmanager.registry, taskmanager.registry):
        for family in registry.collect():
            names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def expressions(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["expr"]] if isinstance(node.get("expr"), str) else []
        return found + [e for value in node.values() for e in expressions(value)]
    if isinstance(node, list):
        return [e for value in node for e in expressions(value)]
    return []


def metric_names(expr: str) -> set[str]:
    return {name for name in IDENTIFIER.findall(expr) if name.startswith("steward_")}


def test_every_metric_the_dashboard_names_is_defined() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = expressions(dashboard)
    assert len(exprs) >= 20
    defined = defined_names()
    unknown = {name for expr in exprs for name in metric_names(expr)} - defined
    assert not unknown, f"the dashboard names metrics no registry defines: {sorted(unknown)}"


def test_the_dashboard_has_a_panel_for_each_area() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    rows = {p["title"] for p in dashboard["panels"] if p["type"] == "row"}
    assert rows >= {"Leadership", "Jobs", "Attempts", "Latency", "ZooKeeper", "TaskManagers"}
    assert any("histogram_quantile" in expr for expr in expressions(dashboard))


@pytest.mark.parametrize(
    "expr",
    ["rate(steward_attempts_begun_total[5m])", "sum(steward_jobs_total)", "steward_slots"],
)
def test_an_unknown_or_misused_name_is_caught(expr: str) -> None:
    assert metric_names(expr) - defined_names()
