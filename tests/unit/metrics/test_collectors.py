"""The metrics' registries: scrape-time state from a snapshot, event counters, Prometheus
naming, bounded labels, and one registry per process object."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from steward.metrics import (
    JobManagerMetrics,
    JobManagerSnapshot,
    TaskManagerMetrics,
    TaskManagerSnapshot,
    exposition,
)
from steward.metrics.jobmanager_metrics import TaskManagerSlots


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def leader_snapshot(age: float | None = 1.5) -> JobManagerSnapshot:
    return JobManagerSnapshot(
        is_leader=True,
        leader_epoch=7,
        zookeeper_connected=True,
        jobs={"RUNNING": 2, "RESTARTING": 1},
        taskmanagers={
            "tm-a": TaskManagerSlots(slots=4, used=3, heartbeat_age=age),
            "tm-b": TaskManagerSlots(slots=2, used=5, heartbeat_age=None),
        },
    )


def test_the_leaders_state_is_read_at_each_scrape() -> None:
    metrics = JobManagerMetrics()
    current = [leader_snapshot()]
    metrics.observe(lambda: current[0])
    first = samples(exposition(metrics.registry))
    assert first[("steward_jobmanager_is_leader", ())] == 1
    assert first[("steward_leader_epoch", ())] == 7
    assert first[("steward_jobs", (("state", "RUNNING"),))] == 2
    assert first[("steward_slots_capacity", ())] == 6
    assert first[("steward_slots_used", ())] == 5  # tm-b's 5 counted as its 2 slots
    assert first[("steward_taskmanagers", ())] == 2
    ages = first[("steward_taskmanager_heartbeat_age_seconds", (("taskmanager", "tm-a"),))]
    assert ages == 1.5
    # tm-b has not sent a heartbeat this term: no age rather than a made-up one
    assert ("steward_taskmanager_heartbeat_age_seconds", (("taskmanager", "tm-b"),)) not in first

    current[0] = JobManagerSnapshot(is_leader=False, leader_epoch=8, zookeeper_connected=False)
    second = samples(exposition(metrics.registry))
    assert second[("steward_jobmanager_is_leader", ())] == 0
    assert second[("steward_leader_epoch", ())] == 8
    assert second[("steward_zookeeper_connected", ())] == 0
    assert not any(name in ("steward_jobs", "steward_slots_capacity") for name, _ in second)


def test_events_are_counted_with_prometheus_names() -> None:
    metrics = JobManagerMetrics()
    metrics.attempt_started(1, since_submission=0.2)
    metrics.attempt_started(2, since_submission=40.0)  # a restart: not a scheduling latency
    metrics.attempt_ended("finished")
    metrics.attempt_ended("failed")
    metrics.restart_scheduled(5.0)
    metrics.recovered(adopted=3, restarted=1)
    metrics.leadership_grants.inc()
    got = samples(exposition(metrics.registry))
    assert got[("steward_attempts_started_total", ())] == 2
    assert got[("steward_scheduling_latency_seconds_count", ())] == 1
    assert got[("steward_scheduling_latency_seconds_sum", ())] == 0.2
    assert got[("steward_attempts_ended_total", (("outcome", "finished"),))] == 1
    assert got[("steward_attempts_ended_total", (("outcome", "failed"),))] == 1
    assert got[("steward_attempts_restarted_total", ())] == 2
    assert got[("steward_attempts_adopted_total", ())] == 3
    assert got[("steward_restart_backoff_seconds_bucket", (("le", "5.0"),))] == 1
    assert got[("steward_leadership_grants_total", ())] == 1
    for name, labels in got:
        assert name.startswith("steward_"), name
        assert {key for key, _ in labels} <= {"outcome", "state", "le", "operation", "kind"}, (
            name,
            labels,
        )


def test_heartbeat_age_comes_from_the_clock() -> None:
    now = [100.0]
    metrics = JobManagerMetrics(clock=lambda: now[0])
    assert metrics.heartbeat_age("tm-a") is None
    metrics.heartbeat_from("tm-a")
    now[0] = 103.5
    assert metrics.heartbeat_age("tm-a") == 3.5


def test_each_object_has_a_registry_of_its_own() -> None:
    one, two = JobManagerMetrics(), JobManagerMetrics()
    one.attempts_started.inc()
    assert samples(exposition(two.registry))[("steward_attempts_started_total", ())] == 0
    one_tm, two_tm = TaskManagerMetrics(), TaskManagerMetrics()  # the same names, no clash
    one_tm.attempts_started.inc()
    assert (
        samples(exposition(two_tm.registry))[("steward_taskmanager_attempts_started_total", ())]
        == 0
    )


def test_the_taskmanagers_slots_and_state() -> None:
    metrics = TaskManagerMetrics()
    metrics.observe(
        lambda: TaskManagerSnapshot(slots=3, used=1, zookeeper_connected=True, fenced=True)
    )
    metrics.attempt_ended("finished")
    got = samples(exposition(metrics.registry))
    assert got[("steward_taskmanager_slots", ())] == 3
    assert got[("steward_taskmanager_slots_used", ())] == 1
    assert got[("steward_taskmanager_fenced", ())] == 1
    assert got[("steward_taskmanager_attempts_ended_total", (("outcome", "finished"),))] == 1


def test_observing_again_replaces_the_state_rather_than_doubling_it() -> None:
    metrics = JobManagerMetrics()
    metrics.observe(leader_snapshot)
    metrics.observe(lambda: JobManagerSnapshot(False, 9, True))
    text = exposition(metrics.registry).decode()
    assert text.count("\nsteward_jobmanager_is_leader ") == 1
    assert samples(exposition(metrics.registry))[("steward_leader_epoch", ())] == 9


def test_every_counter_an_alert_takes_increase_of_is_exported_at_zero_from_the_start() -> None:
    # increase() cannot see a series' first step from nothing to 1: the first failed job, or
    # the first storage failure, of a process would never alert.
    jobmanager = samples(exposition(JobManagerMetrics().registry))
    taskmanager = samples(exposition(TaskManagerMetrics().registry))
    for state in ("FINISHED", "FAILED", "CANCELED"):
        assert jobmanager[("steward_jobs_terminated_total", (("state", state),))] == 0
    for outcome in ("finished", "failed", "lost"):
        assert jobmanager[("steward_attempts_ended_total", (("outcome", outcome),))] == 0
    for exported in (jobmanager, taskmanager):
        for operation in ("put", "get", "delete", "exists", "list"):
            assert exported[("steward_storage_errors_total", (("operation", operation),))] == 0


def test_storage_failures_are_counted_by_operation() -> None:
    metrics = TaskManagerMetrics()
    metrics.storage_failed("get")
    metrics.storage_failed("get")
    metrics.storage_failed("put")
    exported = samples(exposition(metrics.registry))
    assert exported[("steward_storage_errors_total", (("operation", "get"),))] == 2
    assert exported[("steward_storage_errors_total", (("operation", "put"),))] == 1
    assert exported[("steward_storage_errors_total", (("operation", "list"),))] == 0


def test_a_doctor_examination_sets_its_findings_and_time() -> None:
    metrics = JobManagerMetrics()
    before = samples(exposition(metrics.registry))
    assert before[("steward_doctor_last_run_timestamp_seconds", ())] == 0
    assert not any(name == "steward_doctor_findings" for name, _ in before)

    metrics.doctor_examined({"error": 2}, at=1_700_000_000.0)
    first = samples(exposition(metrics.registry))
    assert first[("steward_doctor_findings", (("severity", "error"),))] == 2
    assert first[("steward_doctor_findings", (("severity", "warning"),))] == 0
    assert first[("steward_doctor_last_run_timestamp_seconds", ())] == 1_700_000_000.0

    metrics.doctor_examined({"warning": 1}, at=1_700_000_060.0)
    second = samples(exposition(metrics.registry))
    assert second[("steward_doctor_findings", (("severity", "error"),))] == 0  # fixed since
    assert second[("steward_doctor_findings", (("severity", "warning"),))] == 1
