"""The TaskManager port's ``GET /metrics`` (an app over an in-memory node): a viewer reads the
TaskManager's registry, no token is 401, the internal credential (JobManagers') 403. The
process-level proof is tests/e2e/cluster/test_metrics.py."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from steward.metrics import TaskManagerMetrics, TaskManagerSnapshot
from steward.taskmanager.http.app import create_app
from steward.taskmanager.http.files import AttemptLogs, Phase, RemovedLogs
from steward.taskmanager.http.state import Node
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.wire.tokens import Role


def test_metrics_for_a_viewer_only(tmp_path: Path) -> None:
    security = MemorySecurity()
    logs = AttemptLogs(tmp_path, lambda _job, _n: Phase.ENDED, RemovedLogs())
    app = create_app(Node("tm-1", logs, lambda: None), security.api.authenticator)
    metrics = TaskManagerMetrics()
    metrics.observe(lambda: TaskManagerSnapshot(4, 1, zookeeper_connected=True, fenced=False))
    metrics.attempts_started.inc()
    app.state.metrics = metrics

    viewer = TestClient(app, headers=auth_headers(security.token("prom", Role.VIEWER)))
    answer = viewer.get("/metrics")
    assert answer.status_code == 200, answer.text
    got = {
        s.name: s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }
    assert got["steward_taskmanager_slots"] == 4
    assert got["steward_taskmanager_slots_used"] == 1
    assert got["steward_taskmanager_attempts_started_total"] == 1

    assert TestClient(app).get("/metrics").status_code == 401
    internal = TestClient(app, headers=auth_headers(security.internal)).get("/metrics")
    assert internal.status_code == 403
    assert internal.json()["code"] == "forbidden"
