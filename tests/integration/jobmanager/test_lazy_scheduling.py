"""A new leader schedules jobs without a lease from their status records alone (issue 22).

Reading and validating every job graph blob made the recovery of 10,000 waiting jobs take a
minute. A job that was only waiting for a slot, whose pipeline cannot define ``initialize``
(its record says so), needs nothing of its graph to be SCHEDULED: the graph is read when the
job is placed, or by the term's background reads, whichever comes first. A graph that turns
out missing or corrupt still fails its job with recovery's cause (rule 6), and never reaches
a TaskManager.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from adoption_harness import graph_reads, no_background_reads
from jobmanager_harness import SETTLE, JobManagerCluster, PretendTaskManager, dispatcher_of, report

from steward.store.job_graphs import JobGraphStore
from steward.wire.heartbeat import StartAttempt
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import decode_pointer, decode_status
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOBS = 5


def waiting_jobs(cluster: JobManagerCluster, count: int, **spec: Any) -> list[str]:
    """``count`` jobs submitted to a first leader with no TaskManager (each waits in
    SCHEDULED, with no lease); the first leader then stops (its successor takes over)."""
    leader = cluster.start_leader("jm-1")
    job_ids = [f"job-{i}" for i in range(count)]
    for job_id in job_ids:
        cluster.submitted(leader, job_id, **spec)
    for job_id in job_ids:
        cluster.wait_state(leader, job_id, "SCHEDULED")
    leader.stop()
    return job_ids


def corrupt_graph(cluster: JobManagerCluster, job_id: str) -> None:
    pointer = decode_pointer(cluster.data(cluster.layout.jobgraph(job_id)) or b"", job_id)
    (cluster.storage / pointer.blob).write_bytes(b"\x00garbage\xff" * 64)


def test_recovery_reads_no_graph_blob_of_a_job_it_only_schedules(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_ids = waiting_jobs(cluster, JOBS)
    no_background_reads(monkeypatch)
    reads = graph_reads(monkeypatch)

    successor = cluster.start_leader("jm-2")

    summary = dispatcher_of(successor).recovery_summary
    assert (summary["restarted"], summary["failed"]) == (JOBS, 0)
    assert reads == []
    for job_id in job_ids:
        assert cluster.job(successor, job_id)["state"] == "SCHEDULED"


def test_a_record_that_does_not_say_hookless_is_recovered_from_its_graph(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = waiting_jobs(cluster, 2)
    path = cluster.layout.job_status(old)
    record = decode_status(cluster.data(path) or b"", old)
    cluster.zk.set(path, record.model_copy(update={"hookless": None}).to_json())
    no_background_reads(monkeypatch)
    reads = graph_reads(monkeypatch)

    successor = cluster.start_leader("jm-2")

    assert dispatcher_of(successor).recovery_summary["restarted"] == 2
    assert reads == [old]
    assert cluster.job(successor, new)["state"] == "SCHEDULED"


def test_a_scheduled_job_whose_graph_is_corrupt_fails_with_recoverys_cause_at_once(
    cluster: JobManagerCluster,
) -> None:
    bad, good = waiting_jobs(cluster, 2)
    corrupt_graph(cluster, bad)

    successor = cluster.start_leader("jm-2")  # no TaskManager: only the background reads

    result = cluster.wait_result_clean(successor, bad)
    assert result["state"] == "FAILED"
    assert result["error"]["type"] == "steward.RecoveryError"
    assert "could not be recovered" in result["error"]["message"]
    assert cluster.job(successor, good)["state"] == "SCHEDULED"


def test_a_corrupt_graph_found_at_placement_fails_the_job_and_starts_nothing(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad, good = waiting_jobs(cluster, 2)
    corrupt_graph(cluster, bad)
    no_background_reads(monkeypatch)
    successor = cluster.start_leader("jm-2")
    tm = PretendTaskManager(cluster, "tm-1", slots=2).register()

    start, reply = tm.wait_command(successor, StartAttempt, good)

    result = cluster.wait_result_clean(successor, bad)
    assert result["state"] == "FAILED"
    assert result["error"]["type"] == "steward.RecoveryError"
    assert "could not be recovered" in result["error"]["message"]
    assert [c for c in reply.commands if getattr(c, "job_id", None) == bad] == []
    assert start.attempt == 1


def test_a_job_placed_after_lazy_recovery_runs_with_its_real_graph(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its spec (no restart) is only in its graph: the record says nothing of restarts.
    (job_id,) = waiting_jobs(cluster, 1, restart_strategy={"kind": "none"}, slots=2)
    no_background_reads(monkeypatch)
    reads = graph_reads(monkeypatch)
    successor = cluster.start_leader("jm-2")
    tm = PretendTaskManager(cluster, "tm-1", slots=2).register()

    start, _ = tm.wait_command(successor, StartAttempt, job_id)

    assert reads == [job_id], "the graph is read when the job is placed"
    pointer = decode_pointer(cluster.data(cluster.layout.jobgraph(job_id)) or b"", job_id)
    assert (start.job_graph_blob, start.job_graph_sha256) == (pointer.blob, pointer.sha256)
    failed = FailedEvent(error=ErrorInfo(type="ValueError", message="bad row 17"))
    tm.heartbeat(successor, report(start, AttemptPhase.ENDED, failed))
    result = cluster.wait_result_clean(successor, job_id)
    assert result["state"] == "FAILED", "its own restart strategy (none) was applied"
    assert result["error"]["message"] == "bad row 17"
    wait_until(lambda: not cluster.exists(cluster.layout.jobgraph(job_id)), SETTLE, "cleaned")


def test_the_background_reads_hold_no_lock_while_a_blob_is_read(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    (job_id,) = waiting_jobs(cluster, 1)
    reading, release = threading.Event(), threading.Event()
    real = JobGraphStore.graph_at

    def slow(store: JobGraphStore, job_id: str, pointer: JobGraphPointer) -> Any:
        reading.set()
        release.wait(SETTLE)  # a storage that takes its time
        return real(store, job_id, pointer)

    monkeypatch.setattr(JobGraphStore, "graph_at", slow)
    successor = cluster.start_leader("jm-2")
    table = dispatcher_of(successor).table
    try:
        wait_until(reading.is_set, SETTLE, "the background read began")

        free = table.lock.acquire(timeout=SETTLE / 2)
        if free:
            table.lock.release()
    finally:
        release.set()
    assert free, "the table's lock was held through a blob read"
    assert cluster.job(successor, job_id)["state"] == "SCHEDULED"
