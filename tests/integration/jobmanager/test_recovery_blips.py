"""A blip is not a verdict (issue 23, items 1 and 6a): recovery and loss wait out unavailability.

A new leader that cannot read a job's graph because the storage or ZooKeeper is unavailable
retries that job's recovery; the term is not ready until the job is known, so its running
attempt is neither failed nor cancelled meanwhile. (A job adopted from its record alone needs
no graph at the takeover: its graph's unavailability later is test_lazy_adoption.py's.) An
outcome record that could not be read is read again before the attempt is counted LOST, so a
FINISHED outcome is never ignored.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from adoption_harness import running_behind_lease
from jobmanager_harness import SETTLE, JobManagerCluster, PretendTaskManager, report

from steward.errors import ZooKeeperUnavailableError
from steward.jobmanager.manager import JobManager
from steward.store.job_graphs import JobGraphStore
from steward.store.leases import ExecutionLeases
from steward.store.outcomes import AttemptOutcomes as OutcomeStore
from steward.store.outcomes import encode
from steward.wire.heartbeat import CancelAttempt, OutcomeRecord, StartAttempt
from steward.wire.jobs import JobGraph, JobGraphPointer
from steward.wire.record_format import decode_status
from steward.wire.records import ExecutionLease
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

RUNNING = AttemptPhase.RUNNING
WAITING = "job recovery waits"
"""What the new leader logs each time a job's recovery meets unavailability."""


def _running(
    cluster: JobManagerCluster, job_id: str, **spec: Any
) -> tuple[JobManager, PretendTaskManager, StartAttempt]:
    """jm-1 leading, and ``job_id`` submitted to it and running its first attempt on tm-1
    behind its lease."""
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    return leader, tm, running_behind_lease(cluster, leader, tm, job_id, **spec)


def _without_adoption_facts(cluster: JobManagerCluster, job_id: str) -> None:
    """Make ``job_id``'s record one written before records kept what adoption needs."""
    path = cluster.layout.job_status(job_id)
    record = decode_status(cluster.data(path) or b"", job_id)
    cluster.zk.set(path, record.model_copy(update={"slots": None, "queue": None}).to_json())


def _cancels(reply_commands: list[Any], job_id: str) -> list[Any]:
    return [c for c in reply_commands if isinstance(c, CancelAttempt) and c.job_id == job_id]


def _waits_logged(caplog: pytest.LogCaptureFixture, job_id: str) -> bool:
    return any(
        WAITING in r.getMessage() and f"job={job_id}" in r.getMessage() for r in caplog.records
    )


def _adopted_running(cluster: JobManagerCluster, manager: JobManager, job_id: str) -> None:
    epoch = manager.dispatcher.epoch if manager.dispatcher else -1
    view = cluster.wait_state(manager, job_id, "RUNNING")
    assert [(a["number"], a["state"], a["adopted_by"]) for a in view["attempts"]] == [
        (1, "RUNNING", [epoch])
    ]
    assert view["failures"] == 0


def test_an_unmounted_storage_during_recovery_is_waited_out_and_the_attempt_adopted(
    cluster: JobManagerCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="steward.jobmanager.leader.recovery")
    leader, tm, start = _running(cluster, "job-a")
    leader.stop()
    _without_adoption_facts(cluster, "job-a")  # its recovery reads the graph (issue 22)
    # The storage's mount goes away (an NFS share dropped, a bucket unreachable): every blob
    # read fails, though nothing is lost.
    away = cluster.storage.with_name("storage-unmounted")
    cluster.storage.rename(away)

    successor = cluster.start("jm-2")
    wait_until(
        lambda: (
            successor.dispatcher is not None
            and (successor.dispatcher.ready or _waits_logged(caplog, "job-a"))
        ),
        SETTLE,
        message="jm-2 recovers (or retries) job-a",
    )
    dispatcher = successor.dispatcher
    assert dispatcher is not None
    assert not dispatcher.ready, "the term was ready while job-a's graph could not be read"
    # Counted for StewardStorageErrors (deploy/prometheus/steward-alerts.yml)
    failed_reads = successor.metrics.registry.get_sample_value(
        "steward_storage_errors_total", {"operation": "get"}
    )
    assert failed_reads is not None and failed_reads >= 1
    assert not cluster.exists(cluster.layout.result("job-a")), "a blip gave job-a a result"
    beat = tm.heartbeat(successor, report(start, RUNNING))
    assert _cancels(beat.commands, "job-a") == []

    away.rename(cluster.storage)
    cluster.wait_leading(successor)
    _adopted_running(cluster, successor, "job-a")
    beat = tm.heartbeat(successor, report(start, RUNNING))
    assert beat.commands == []
    assert not cluster.exists(cluster.layout.result("job-a"))


def test_a_lost_zookeeper_connection_on_a_pointer_read_is_retried(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader, tm, start = _running(cluster, "job-b")
    leader.stop()
    read = JobGraphStore.get_with_pointer
    failed: list[str] = []

    def batch_lost(store: JobGraphStore, job_ids: list[str]) -> None:
        # The pipelined read of the chunk's pointers loses the connection: each job then
        # reads its own pointer, and the first of those reads loses it too.
        failed.append("batch")
        raise ZooKeeperUnavailableError("lost the ZooKeeper connection (pointers)")

    def once(store: JobGraphStore, job_id: str) -> tuple[JobGraphPointer, JobGraph]:
        if failed == ["batch"]:  # one ConnectionLoss, as kazoo_errors maps it
            failed.append(job_id)
            raise ZooKeeperUnavailableError(f"lost the ZooKeeper connection (at {job_id})")
        return read(store, job_id)

    monkeypatch.setattr(JobGraphStore, "pointers_quietly", batch_lost)
    monkeypatch.setattr(JobGraphStore, "get_with_pointer", once)
    # Without a warm copy (store/warm_records.py), which would spare the pointers' read.
    successor = cluster.start_leader("jm-2", **{"jobmanager.warm-standby": False})
    assert failed == ["batch", "job-b"]
    _adopted_running(cluster, successor, "job-b")
    assert not cluster.exists(cluster.layout.result("job-b")), "a blip gave job-b a result"
    beat = tm.heartbeat(successor, report(start, RUNNING))
    assert beat.commands == []


def test_a_lost_zookeeper_connection_while_listing_the_leases_is_waited_out_in_the_same_term(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader, tm, start = _running(cluster, "job-c")
    leader.stop()
    read = ExecutionLeases.all
    failed: list[str] = []

    def once(leases: ExecutionLeases) -> dict[str, ExecutionLease]:
        if not failed:  # one ConnectionLoss, as kazoo_errors maps it
            failed.append("leases")
            raise ZooKeeperUnavailableError("lost the ZooKeeper connection (executions)")
        return read(leases)

    monkeypatch.setattr(ExecutionLeases, "all", once)
    # The leases read from ZooKeeper (a warm standby's come from its copy).
    successor = cluster.start_leader("jm-2", **{"jobmanager.warm-standby": False})
    assert failed == ["leases"]
    # The same term recovered: stepping down would have cost an epoch and a second recovery.
    assert successor.dispatcher is not None
    assert successor.dispatcher.epoch == start.epoch + 1
    _adopted_running(cluster, successor, "job-c")
    beat = tm.heartbeat(successor, report(start, RUNNING))
    assert beat.commands == []


def test_a_failed_read_of_an_outcome_record_is_retried_not_counted_lost(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    restart = {"kind": "fixed-delay", "attempts": 3, "delay": 0}
    leader, tm, start = _running(cluster, "job-c", restart_strategy=restart)
    # The attempt finished; its TaskManager records the outcome as it releases the lease (one
    # multi-op, as ExecutionLeases does), then dies before it reports.
    record = OutcomeRecord(
        job_id="job-c",
        attempt=start.attempt,
        taskmanager=tm.id,
        epoch=start.epoch,
        outcome=FinishedEvent(value="done"),
    )
    transaction = tm.zk.transaction()
    transaction.delete(cluster.layout.execution("job-c"))
    transaction.create(cluster.layout.attempt_outcome("job-c", start.attempt), encode(record))
    assert not [r for r in transaction.commit() if isinstance(r, Exception)]
    find = OutcomeStore.find
    failed: list[str] = []

    def once(store: OutcomeStore, job_id: str, attempt: int) -> OutcomeRecord | None:
        if not failed:
            failed.append(job_id)
            raise ZooKeeperUnavailableError(f"lost the ZooKeeper connection (at {job_id})")
        return find(store, job_id, attempt)

    monkeypatch.setattr(OutcomeStore, "find", once)
    tm.unregister()

    result = cluster.wait_result_clean(leader, "job-c")
    assert failed == ["job-c"]
    assert (result["state"], result["value"]) == ("FINISHED", "done")
    view = cluster.job(leader, "job-c")
    assert [(a["number"], a["state"]) for a in view["attempts"]] == [(1, "FINISHED")]
    assert view["failures"] == 0
