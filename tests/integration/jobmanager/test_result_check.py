"""No new attempt of a job that has a result (rule 7), checked before every attempt is placed.

A new leader adopts a job that holds a lease without looking up its result (issue 22: one
ZooKeeper read a job less at a takeover). A lease does not rule a result out: a TaskManager
reports an attempt's outcome before it deletes the lease (only once the attempt's whole
process group is gone, rule 3), so a leader can record the result and die while the lease is
still held. The check before every new attempt (``leader/result_check.py``) is what keeps such
a job from being started again when its adopted attempt is then lost.
"""

from __future__ import annotations

import time

import pytest
from adoption_harness import leased_jobs
from jobmanager_harness import (
    SETTLE,
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.jobmanager.leader.cleanup import Cleanup
from steward.store.results import JobResultStore
from steward.wire.heartbeat import StartAttempt
from steward.wire.records import ExecutionLease, JobResultEntry
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase, TerminalState
from support import wait_until

pytestmark = pytest.mark.zookeeper

RESTARTS = {"kind": "fixed-delay", "attempts": 3, "delay": 0}
"""A strategy that restarts a lost attempt at once: only the result check stops it."""


def test_a_job_with_a_result_and_a_lease_at_takeover_is_not_started_again_when_its_tm_is_lost(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = "job-done"
    first = cluster.start_leader("jm-1")
    tm1 = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(first, job_id, restart_strategy=RESTARTS)
    start, _ = tm1.wait_command(first, StartAttempt, job_id)
    lease = ExecutionLease(taskmanager=tm1.id, attempt=start.attempt, epoch=start.epoch)
    lease_path = cluster.layout.execution(job_id)
    tm1.zk.create(lease_path, lease.to_json(), ephemeral=True)
    # The outcome is reported while the lease is still held (the process group not gone yet);
    # the leader records the result and dies before its cleanup removes the job's graph.
    monkeypatch.setattr(Cleanup, "put", lambda cleanup, job_id: None)
    ended = report(start, AttemptPhase.ENDED, FinishedEvent(value={"rows": 3}))
    tm1.heartbeat(first, ended.model_copy(update={"lease_released": False}))
    wait_until(lambda: cluster.exists(cluster.layout.result(job_id)), SETTLE, "result recorded")
    first.stop()
    monkeypatch.undo()
    tm2 = PretendTaskManager(cluster, "tm-2").register()

    successor = cluster.start_leader("jm-2")
    assert dispatcher_of(successor).recovery_summary["adopted"] == 1  # no lookup: adopted
    tm1.unregister()  # its TaskManager lost: registration and lease gone
    tm1.zk.delete(lease_path)

    result = cluster.wait_result_clean(successor, job_id)
    assert (result["state"], result["value"]) == ("FINISHED", {"rows": 3})
    reply = tm2.heartbeat(successor)  # a start command queued for it would come now
    assert [c for c in reply.commands if isinstance(c, StartAttempt)] == []
    assert not cluster.exists(cluster.layout.jobgraph(job_id))


def test_a_waiting_job_whose_result_appears_before_its_start_is_settled_not_started(
    cluster: JobManagerCluster,
) -> None:
    job_id = "job-waiting"
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, job_id, restart_strategy=RESTARTS)
    cluster.wait_state(leader, job_id, "SCHEDULED")  # no TaskManager: it waits for a slot
    # A result the leader has not read (as one an earlier leader recorded for an attempt
    # this one adopted without looking it up), written behind its back.
    dispatcher = dispatcher_of(leader)
    entry = JobResultEntry(
        job_id=job_id,
        state=TerminalState.FINISHED,
        value={"by": "an earlier attempt"},
        finished_at=time.time(),
        epoch=dispatcher.epoch,
    )
    dispatcher.stores.results.create_dirty(dispatcher.fence, entry)

    tm = PretendTaskManager(cluster, "tm-1").register()  # a free slot for it

    result = cluster.wait_result_clean(leader, job_id)
    assert (result["state"], result["value"]) == ("FINISHED", {"by": "an earlier attempt"})
    reply = tm.heartbeat(leader)
    assert [c for c in reply.commands if isinstance(c, StartAttempt)] == []
    assert not cluster.exists(cluster.layout.execution(job_id))


def test_a_takeover_looks_up_the_results_of_the_jobs_without_a_lease_only(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leased, unleased = ["job-0", "job-1"], ["job-2"]
    leased_jobs(cluster, [*leased, *unleased], leased=len(leased))
    looked_up: list[str] = []
    real = JobResultStore.with_result

    def counted(store: JobResultStore, job_ids: list[str]) -> set[str]:
        looked_up.extend(job_ids)
        return real(store, job_ids)

    monkeypatch.setattr(JobResultStore, "with_result", counted)

    successor = cluster.start_leader("jm-2")

    assert dispatcher_of(successor).recovery_summary["adopted"] == len(leased)
    assert looked_up == unleased
