"""A standby that followed every job takes over from what it holds (issue 22).

A new leader used to read every live job's graph pointer and status record from ZooKeeper
before its term was ready: most of a takeover's time at 10,000 jobs. A standby now follows
them (``store/warm_records.py``) and its recovery reads only what it cannot vouch for; what it
concludes must be what it would have concluded from ZooKeeper (docs/architecture.md, "A warm
standby"): every job adopted, none restarted, and a job that ended on the old leader stays
ended (rule 7).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from adoption_harness import leased_on
from jobmanager_harness import (
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.jobmanager.manager import JobManager
from steward.store.leases import ExecutionLeases
from steward.store.statuses import JobStatusStore
from steward.wire.heartbeat import StartAttempt
from steward.wire.records import ExecutionLease
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOBS = 6


def leases_listed_on_recovery(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A mark for each listing of every lease that recovery's threads made in ZooKeeper."""
    listed: list[str] = []
    real = ExecutionLeases.all

    def counted(leases: ExecutionLeases) -> dict[str, ExecutionLease]:
        if "recover" in threading.current_thread().name:
            listed.append("leases")
        return real(leases)

    monkeypatch.setattr(ExecutionLeases, "all", counted)
    return listed


def records_read_on_recovery(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The job ids whose status records recovery's threads read from ZooKeeper."""
    read: list[str] = []
    real = JobStatusStore.find_many_versioned

    def counted(store: JobStatusStore, job_ids: list[str]) -> object:
        if "recover" in threading.current_thread().name:
            read.extend(job_ids)
        return real(store, job_ids)

    monkeypatch.setattr(JobStatusStore, "find_many_versioned", counted)
    return read


def warm_standby(cluster: JobManagerCluster, jobs: int) -> JobManager:
    standby = cluster.start("jm-2")
    warm = standby.warm
    assert warm is not None
    wait_until(lambda: warm.held >= jobs, 20, f"jm-2 holds {jobs} jobs' records")
    return standby


@dataclass
class Takeover:
    """:data:`JOBS` leased jobs on jm-1, a warm standby jm-2 holding them all, and what jm-2's
    recovery reads from ZooKeeper once jm-1 stops."""

    job_ids: list[str]
    leader: JobManager
    standby: JobManager
    read: list[str]
    listed: list[str]


@pytest.fixture
def takeover(cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch) -> Takeover:
    job_ids = [f"job-{i}" for i in range(JOBS)]
    leader = cluster.start_leader("jm-1")
    leased_on(cluster, leader, job_ids)
    standby = warm_standby(cluster, JOBS)
    read = records_read_on_recovery(monkeypatch)
    return Takeover(job_ids, leader, standby, read, leases_listed_on_recovery(monkeypatch))


def test_a_warm_standby_adopts_every_job_without_reading_their_records_or_leases(
    cluster: JobManagerCluster, takeover: Takeover
) -> None:
    standby = takeover.standby
    takeover.leader.stop()
    cluster.wait_leading(standby)

    summary = dispatcher_of(standby).recovery_summary
    assert (summary["adopted"], summary["restarted"], summary["failed"]) == (JOBS, 0, 0)
    assert takeover.read == []
    assert takeover.listed == []
    for job_id in takeover.job_ids:
        job = cluster.job(standby, job_id)
        assert job["state"] == "RUNNING"
        assert job["attempts"][-1]["adopted_by"] == [2]


def test_a_standby_that_cannot_vouch_for_its_records_reads_them_all(
    cluster: JobManagerCluster, takeover: Takeover, monkeypatch: pytest.MonkeyPatch
) -> None:
    standby = takeover.standby
    # A barrier never served (as behind a worker stuck on a dead connection): no vouching.
    monkeypatch.setattr(standby.warm, "take", lambda _timeout: None)

    takeover.leader.stop()
    cluster.wait_leading(standby)

    summary = dispatcher_of(standby).recovery_summary
    assert (summary["adopted"], summary["restarted"], summary["failed"]) == (JOBS, 0, 0)
    assert sorted(takeover.read) == sorted(takeover.job_ids)
    assert takeover.listed == ["leases"]


def test_a_job_finished_on_the_old_leader_just_before_the_grant_stays_finished(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1", slots=2).register()
    cluster.submitted(leader, "job-done")
    start, _ = tm.wait_command(leader, StartAttempt, "job-done")
    tm.lease(start)
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    cluster.wait_state(leader, "job-done", "RUNNING")
    standby = warm_standby(cluster, 1)

    # Its end reported, its lease released, and the leader gone right after its result.
    tm.zk.delete(cluster.layout.execution("job-done"))
    tm.heartbeat(leader, report(start, AttemptPhase.ENDED, FinishedEvent(value=3)))
    wait_until(lambda: cluster.exists(cluster.layout.result("job-done")), 10, "a result")
    leader.stop()
    cluster.wait_leading(standby)

    assert cluster.job(standby, "job-done")["state"] == "FINISHED"
    reply = tm.heartbeat(standby)
    assert [c for c in reply.commands if isinstance(c, StartAttempt)] == []
    assert dispatcher_of(standby).table.jobs.get("job-done") is None


def test_a_leader_that_stops_does_not_read_every_job_again_for_a_next_term(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    warm = leader.warm
    assert warm is not None
    followed: list[str] = []
    monkeypatch.setattr(warm, "follow", lambda: followed.append("follow"))

    leader.stop()

    assert followed == []
