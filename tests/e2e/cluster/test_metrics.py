"""``GET /metrics`` with real processes and a real ZooKeeper: a job runs, then the leader, a
standby and the TaskManager are scraped with a viewer's token and their answers parsed as
Prometheus parses them; without a token each answers 401.

One cluster for the module (two JobManagers, one TaskManager with two slots).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import TerminalState
from steward.wire.tokens import Role
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

PIPELINE = """
def main(ctx):
    return {"answer": 42}
"""
SLOTS = 2


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    folder = tmp_path_factory.mktemp("metrics")
    with ProcessCluster(
        folder, zookeeper.connect_string, f"t-metrics-{folder.name[-6:]}"
    ) as cluster:
        cluster.start_jobmanager("jm-1")
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=SLOTS)
        cluster.wait_ready(taskmanagers=1)
        wait_until(lambda: len((cluster.cluster_view() or {}).get("jobmanagers", [])) == 2, 30)
        yield cluster


@pytest.fixture(scope="module")
def viewer(cluster: ProcessCluster) -> dict[str, str]:
    with cluster.client() as admin:
        token = admin.create_token("prometheus", Role.VIEWER).token
    return {"authorization": f"Bearer {token}"}


def _taskmanager_address(cluster: ProcessCluster) -> str:
    view = cluster.cluster_view() or {}
    address: str = view["taskmanagers"][0]["http_address"]
    return address


def _scrape(cluster: ProcessCluster, url: str, headers: dict[str, str]) -> dict[str, Metric]:
    answer = httpx.get(url + "/metrics", headers=headers, verify=cluster.tls.context, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {family.name: family for family in text_string_to_metric_families(answer.text)}


def _value(families: dict[str, Metric], name: str, **labels: str) -> float:
    """The one sample named ``name`` (``_total``, ``_count``... included) whose labels include
    ``labels``."""
    found = [
        s.value
        for family in families.values()
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def _labels(families: dict[str, Metric]) -> set[str]:
    return {key for family in families.values() for s in family.samples for key in s.labels}


def test_metrics_need_a_token_on_every_process(cluster: ProcessCluster) -> None:
    verify = cluster.tls.context
    for url in [p.address for p in cluster.jobmanagers()] + [_taskmanager_address(cluster)]:
        refused = httpx.get(url + "/metrics", verify=verify, timeout=10)
        assert refused.status_code == 401, (url, refused.text)
        assert "steward_" not in refused.text
        assert httpx.get(url + "/healthz", verify=verify, timeout=10).status_code == 200


def test_leader_standby_and_taskmanager_count_a_finished_job(
    cluster: ProcessCluster, viewer: dict[str, str], tmp_path: Path
) -> None:
    pipeline = tmp_path / "answer.py"
    pipeline.write_text(PIPELINE)
    with cluster.client() as client:
        client.submit(pipeline, job_id="counted")
        assert client.wait("counted", timeout=60).state is TerminalState.FINISHED
    leader = cluster.leader()
    assert leader is not None
    standby: Proc = next(p for p in cluster.jobmanagers() if p.id != leader.id)
    led = _scrape(cluster, leader.address, viewer)
    stood = _scrape(cluster, standby.address, viewer)
    worked = _scrape(cluster, _taskmanager_address(cluster), viewer)

    # Leadership: is_leader 1 on one JobManager only, both know the same epoch.
    assert _value(led, "steward_jobmanager_is_leader") == 1
    assert _value(stood, "steward_jobmanager_is_leader") == 0
    assert _value(led, "steward_leader_epoch") == _value(stood, "steward_leader_epoch") >= 1
    assert _value(led, "steward_leadership_grants_total") == 1
    assert _value(stood, "steward_leadership_grants_total") == 0
    assert _value(led, "steward_recovery_duration_seconds_count") == 1
    assert _value(led, "steward_zookeeper_connected") == 1
    # The job: started, ended finished, its result recorded; no live job left.
    assert _value(led, "steward_attempts_started_total") >= 1
    assert _value(led, "steward_attempts_ended_total", outcome="finished") >= 1
    assert _value(led, "steward_jobs_terminated_total", state="FINISHED") >= 1
    assert _value(led, "steward_jobs", state="RUNNING") == 0
    assert _value(led, "steward_submission_duration_seconds_count") >= 1
    assert _value(led, "steward_scheduling_latency_seconds_count") >= 1
    # Only the leader knows jobs and slots.
    assert "steward_jobs" not in stood and "steward_slots_capacity" not in stood
    assert _value(led, "steward_slots_capacity") == SLOTS
    assert _value(led, "steward_slots_used") == 0
    age = _value(led, "steward_taskmanager_heartbeat_age_seconds", taskmanager="tm-1")
    assert 0 <= age < 10
    # The TaskManager: its slots and the attempt it ran.
    assert _value(worked, "steward_taskmanager_slots") == SLOTS
    assert _value(worked, "steward_taskmanager_attempts_started_total") >= 1
    assert _value(worked, "steward_taskmanager_attempts_ended_total", outcome="finished") >= 1
    assert _value(worked, "steward_zookeeper_connected") == 1
    assert _value(led, "steward_queue_waiting", queue="default") == 0
    # Bounded labels: never a job id (queues are the configured ones).
    for families in (led, stood, worked):
        assert _labels(families) <= {
            "state",
            "outcome",
            "taskmanager",
            "queue",
            "le",
            "operation",
            "severity",
            "kind",
        }
        assert "counted" not in str([f.samples for f in families.values()])


def test_a_doctor_examination_is_exported_by_the_jobmanager_that_made_it(
    cluster: ProcessCluster, viewer: dict[str, str]
) -> None:
    # What the doctor alerts read (deploy/prometheus/steward-alerts.yml), and the storage
    # failures counted on both kinds of process (none here).
    examined = cluster.jobmanagers()[-1]
    before = time.time()
    answer = httpx.get(
        examined.address + "/v1/doctor",
        headers=cluster.headers,
        verify=cluster.tls.context,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    errors = sum(1 for f in answer.json()["findings"] if f["severity"] == "error")

    scraped = _scrape(cluster, examined.address, viewer)
    assert _value(scraped, "steward_doctor_last_run_timestamp_seconds") >= before
    assert _value(scraped, "steward_doctor_findings", severity="error") == errors
    for url in (examined.address, _taskmanager_address(cluster)):
        assert (
            _value(_scrape(cluster, url, viewer), "steward_storage_errors_total", operation="put")
            == 0
        )
