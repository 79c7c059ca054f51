"""A new leader adopts running attempts from their leases and status records alone (issue 22).

Reading and validating every job graph blob at the takeover was most of a failover's cost at
10,000 running jobs. The graph of an adopted job is now read once the term is ready, or first
when the job needs it (its attempt ends or is lost: the restart strategy and webhooks are in
it); a graph that turns out missing then fails that job alone, as recovery failed it before
(rule 6). A record written
before the facts adoption needs were kept in it is recovered as before, reading the graph.
"""

from __future__ import annotations

import pytest
from adoption_harness import (
    ended_report,
    graph_reads,
    leased_jobs,
    no_background_reads,
    running_report,
)
from jobmanager_harness import SETTLE, JobManagerCluster, PretendTaskManager, dispatcher_of

from steward.jobmanager.manager import JobManager
from steward.wire.heartbeat import AttemptReport, CancelAttempt
from steward.wire.record_format import decode_pointer, decode_status
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import FailedEvent
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOBS = 5


def failed_report(job_id: str) -> AttemptReport:
    return ended_report(
        job_id, FailedEvent(error=ErrorInfo(type="ValueError", message="bad row 17"))
    )


def test_takeover_reads_no_graph_blob_for_an_adopted_job(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_ids = [f"job-{i}" for i in range(JOBS)]
    leased_jobs(cluster, job_ids)
    reads = graph_reads(monkeypatch, thread="recover")

    successor = cluster.start_leader("jm-2")

    summary = dispatcher_of(successor).recovery_summary
    assert (summary["adopted"], summary["failed"]) == (JOBS, 0)
    assert reads == []
    for job_id in job_ids:
        job = cluster.job(successor, job_id)
        assert job["state"] == "RUNNING"
        assert job["attempts"][-1]["adopted_by"] == [2]


def taken_over_with_a_graph_gone(
    cluster: JobManagerCluster, gone: str, kept: str
) -> tuple[PretendTaskManager, JobManager]:
    """``gone`` and ``kept`` leased on a TaskManager, ``gone``'s graph blob deleted, and jm-2
    leading after adopting both."""
    tm = leased_jobs(cluster, [gone, kept])
    pointer = decode_pointer(cluster.data(cluster.layout.jobgraph(gone)) or b"", gone)
    (cluster.storage / pointer.blob).unlink()
    successor = cluster.start_leader("jm-2")
    assert dispatcher_of(successor).recovery_summary["adopted"] == 2
    return tm, successor


def test_an_adopted_job_whose_graph_is_gone_fails_after_the_takeover_and_its_attempt_stops(
    cluster: JobManagerCluster,
) -> None:
    gone, kept = "job-0", "job-1"
    tm, successor = taken_over_with_a_graph_gone(cluster, gone, kept)

    result = cluster.wait_result_clean(successor, gone)

    assert result["state"] == "FAILED"
    assert result["error"]["type"] == "steward.RecoveryError"
    running = [running_report(job_id) for job_id in (gone, kept)]
    cancel, _ = tm.wait_command(successor, CancelAttempt, gone, *running)
    assert cancel.attempt == 1
    assert cluster.job(successor, kept)["state"] == "RUNNING"


def test_an_adopted_job_whose_graph_is_gone_fails_when_its_attempt_ends(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_background_reads(monkeypatch)
    gone, kept = "job-0", "job-1"
    tm, successor = taken_over_with_a_graph_gone(cluster, gone, kept)

    tm.heartbeat(successor, failed_report(gone), failed_report(kept))

    result = cluster.wait_result_clean(successor, gone)
    assert result["state"] == "FAILED"
    assert result["error"]["type"] == "steward.RecoveryError"
    assert "could not be recovered" in result["error"]["message"]
    # The other job's graph was read for its restart: it restarts, as its strategy says.
    wait_until(lambda: _attempt_state(cluster, successor, kept) == "FAILED", SETTLE, "ended")
    assert cluster.job(successor, kept)["state"] in ("RESTARTING", "SCHEDULED", "RUNNING")


def test_an_outcome_while_the_storage_is_away_concludes_nothing_until_it_is_back(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_background_reads(monkeypatch)
    job_id = "job-0"
    tm = leased_jobs(cluster, [job_id])
    successor = cluster.start_leader("jm-2")  # ready: adoption needed no blob
    away = cluster.storage.with_name("storage-unmounted")
    cluster.storage.rename(away)

    reply = tm.heartbeat(successor, failed_report(job_id))

    assert [ack for ack in reply.acks if ack.job_id == job_id and ack.outcome] == []
    assert cluster.job(successor, job_id)["state"] == "RUNNING"
    assert not cluster.exists(cluster.layout.result(job_id)), "a blip gave the job a result"
    away.rename(cluster.storage)
    reply = tm.heartbeat(successor, failed_report(job_id))  # sent again, as a TaskManager does
    assert [ack.outcome for ack in reply.acks if ack.job_id == job_id] == [True]
    assert _attempt_state(cluster, successor, job_id) == "FAILED"
    assert not cluster.exists(cluster.layout.result(job_id)), "its strategy restarts it"


def test_a_record_from_before_the_facts_were_kept_is_recovered_from_its_graph(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = "job-0", "job-1"
    leased_jobs(cluster, [old, new])
    path = cluster.layout.job_status(old)
    record = decode_status(cluster.data(path) or b"", old)
    cluster.zk.set(path, record.model_copy(update={"slots": None, "queue": None}).to_json())
    reads = graph_reads(monkeypatch, thread="recover")

    successor = cluster.start_leader("jm-2")

    assert dispatcher_of(successor).recovery_summary["adopted"] == 2
    assert reads == [old]
    wait_until(lambda: _state(cluster, successor, new) == "RUNNING", SETTLE, "adopted")


def _state(cluster: JobManagerCluster, manager: JobManager, job_id: str) -> str:
    return str(cluster.job(manager, job_id)["state"])


def _attempt_state(cluster: JobManagerCluster, manager: JobManager, job_id: str) -> str:
    return str(cluster.job(manager, job_id)["attempts"][0]["state"])
