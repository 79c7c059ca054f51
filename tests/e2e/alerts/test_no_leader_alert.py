"""The shipped alert rules, end to end: a real Prometheus scrapes a real Steward cluster (two
JobManagers, one TaskManager) with a viewer's token and evaluates deploy/prometheus/
steward-alerts.yml as shipped; a real Alertmanager delivers to a webhook the test runs.

Killing the leader (a failover) raises nothing; stopping the last JobManager too makes
StewardNoLeader fire once its ``for:`` (30 s) has passed, and the webhook receives it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_kit import (
    Server,
    WebhookReceiver,
    active_alerts,
    prometheus_config,
    query,
    start_alertmanager,
    start_prometheus,
    webhook_receiver,
)

from steward.testing.processes import Proc, ProcessCluster
from steward.wire.tokens import Role
from support import wait_until

pytestmark = pytest.mark.zookeeper

NO_LEADER = "StewardNoLeader"
PROMETHEUS_INTERVAL = 1.0
"""Its scrapes' and evaluations' interval (prometheus_kit's configuration)."""
FIRES_WITHIN = 90.0
"""The rule's 30 s ``for:``, scrapes and evaluations every second, delivery at once: well
inside this on a loaded machine."""


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as receiver:
        yield receiver


@pytest.fixture
def cluster(process_cluster: ProcessCluster) -> ProcessCluster:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1", slots=1)
    process_cluster.wait_ready(taskmanagers=1)
    return process_cluster


@pytest.fixture
def prometheus(
    cluster: ProcessCluster, webhook: WebhookReceiver, tmp_path: Path
) -> Iterator[Server]:
    with cluster.client() as admin:
        token = admin.create_token("prometheus", Role.VIEWER).token
    token_file = tmp_path / "prometheus.token"
    token_file.write_text(token)
    os.chmod(token_file, 0o600)
    view = cluster.cluster_view() or {}
    taskmanagers = [tm["http_address"] for tm in view["taskmanagers"]]
    alertmanager = start_alertmanager(tmp_path / "alertmanager", webhook.url)
    try:
        config = prometheus_config(
            [p.address for p in cluster.jobmanagers()], taskmanagers, token_file, alertmanager.url
        )
        server = start_prometheus(tmp_path / "prometheus", config)
        try:
            yield server
        finally:
            server.stop()
    finally:
        alertmanager.stop()


def _value(prometheus: Server, expr: str) -> float | None:
    result = query(prometheus, expr)
    return float(result[0]["value"][1]) if result else None


def _leader_seen(prometheus: Server, proc: Proc) -> bool:
    instance = proc.address.split("://", 1)[1]
    expr = f'steward_jobmanager_is_leader{{instance="{instance}"}}'
    return _value(prometheus, expr) == 1


def test_stopping_every_jobmanager_fires_no_leader_and_alertmanager_delivers_it(
    cluster: ProcessCluster, prometheus: Server, webhook: WebhookReceiver
) -> None:
    # Every process scraped with the viewer's token (a refused token is up == 0), one leader.
    wait_until(lambda: _value(prometheus, "count(up == 1)") == 3, 30, "3 targets up")
    first = cluster.leader()
    assert first is not None
    wait_until(lambda: _leader_seen(prometheus, first), 30, "Prometheus sees the leader")

    first.signal(signal.SIGKILL)  # a failover: the standby takes over in well under a second
    second = next(p for p in cluster.jobmanagers() if p is not first)
    wait_until(lambda: cluster.leader() == second, 30, "the standby leads")
    wait_until(lambda: _leader_seen(prometheus, second), 30, "Prometheus sees the new leader")
    # A scrape between the two leaders may have made the alert pending: its `for:` held it, and
    # an evaluation that sees the new leader ends it. Wait for that one, so that what fires
    # below was made pending by the stop alone.
    assert "firing" not in _no_leader_states(prometheus)
    wait_until(lambda: not _no_leader_states(prometheus), 30, "no pending no-leader alert")

    stopping = time.monotonic()  # a graceful stop gives up leadership first
    second.signal(signal.SIGTERM)
    assert second.popen.wait(30) is not None

    delivered = wait_until(lambda: webhook.alerts(NO_LEADER), FIRES_WITHIN, "no-leader delivered")
    at, alert = delivered[0]
    # The rule's `for:` made it fire. Prometheus times it from its own timestamps: a sample's is
    # its scrape's start, which can precede the stop by a scrape answered after it, and an
    # evaluation can run late (load): one interval of each.
    assert at - stopping >= 30 - 2 * PROMETHEUS_INTERVAL
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["summary"] == "No Steward JobManager leads"
    assert all(at >= stopping for at, _ in delivered)  # nothing from the failover before


def _no_leader_states(prometheus: Server) -> list[str]:
    """The states (pending, firing) of the no-leader alerts Prometheus holds now."""
    return [
        alert["state"]
        for alert in active_alerts(prometheus)
        if alert["labels"]["alertname"] == NO_LEADER
    ]
