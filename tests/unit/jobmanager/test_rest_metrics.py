"""``GET /metrics`` of the REST API over the in-memory JobManager of test_rest_app: a viewer
reads the Prometheus text, the internal credential may not, and the state gauges follow the
JobManager's (leader, then standby) at each scrape. The process-level proof (real leader,
standby and TaskManager) is tests/e2e/cluster/test_metrics.py."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from test_rest_app import InMemoryJobManager, InMemoryTerm, submission

from steward.jobmanager.app import create_app
from steward.metrics import JobManagerMetrics
from steward.store.blob import BlobStore
from steward.testing.credentials import MemorySecurity, auth_headers, kit_admin_token
from steward.wire.records import LeaderInfo
from steward.wire.tokens import Role

LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:1", epoch=4)


def scrape(client: TestClient) -> dict[str, float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        s.name + str(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def test_a_viewer_reads_the_metrics_of_the_leader_then_of_a_standby(tmp_path: Path) -> None:
    security = MemorySecurity()
    manager = InMemoryJobManager(
        blobs=BlobStore(str(tmp_path)), dispatcher=InMemoryTerm(), known_leader=LEADER
    )
    metrics = JobManagerMetrics()
    app = create_app(manager, security.api, job_metrics=metrics)
    with TestClient(app, headers=auth_headers(kit_admin_token())) as admin:
        assert admin.post("/v1/jobs", json=submission("counted")).status_code == 201
    metrics.leadership_grants.inc()
    viewer = TestClient(app, headers=auth_headers(security.token("prom", Role.VIEWER)))

    led = scrape(viewer)
    assert led["steward_jobmanager_is_leader[]"] == 1
    assert led["steward_leader_epoch[]"] == 4
    assert led["steward_leadership_grants_total[]"] == 1
    assert sum(v for k, v in led.items() if k.startswith("steward_jobs[")) == 1
    assert "counted" not in str(led)
    assert led["steward_queue_waiting[('queue', 'etl')]"] == 3
    assert led["steward_queue_running[('queue', 'etl')]"] == 2

    manager.dispatcher = None  # the term ended: a standby now
    stood = scrape(viewer)
    assert stood["steward_jobmanager_is_leader[]"] == 0
    assert not any(k.startswith("steward_jobs[") for k in stood)
    assert stood["steward_leadership_grants_total[]"] == 1  # what it counted while it led


def test_no_token_is_401_and_the_internal_credential_403(tmp_path: Path) -> None:
    security = MemorySecurity()
    manager = InMemoryJobManager(blobs=BlobStore(str(tmp_path)), known_leader=LEADER)
    app = create_app(manager, security.api)
    refused = TestClient(app).get("/metrics")
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized"
    internal = TestClient(app, headers=auth_headers(security.internal)).get("/metrics")
    assert internal.status_code == 403
    assert "steward_" not in internal.text


def test_a_viewer_reads_the_queues_of_the_leader_and_no_token_is_401(tmp_path: Path) -> None:
    security = MemorySecurity()
    manager = InMemoryJobManager(
        blobs=BlobStore(str(tmp_path)), dispatcher=InMemoryTerm(), known_leader=LEADER
    )
    app = create_app(manager, security.api)
    assert TestClient(app).get("/v1/queues").status_code == 401
    viewer = TestClient(app, headers=auth_headers(security.token("v", Role.VIEWER)))
    answer = viewer.get("/v1/queues")
    assert answer.status_code == 200, answer.text
    assert answer.json()["queues"][0] | {"name": "etl", "waiting": 3} == answer.json()["queues"][0]
    assert answer.json()["served_by"] == "jm-1"
