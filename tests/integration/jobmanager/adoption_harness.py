"""Jobs a first leader hands to its successor with their attempts still leased.

The set-up of the tests of adoption (a new leader takes running attempts from their leases):
jobs submitted to ``jm-1``, attempt 1 of each holding its execution lease on a
:class:`PretendTaskManager`, then ``jm-1`` stopped. The test starts the successor (after
whatever it tampers with) and drives the TaskManager's reports of the adopted attempts.
:func:`running_behind_lease` is one such job, running on the first leader's watch.

Import as ``from adoption_harness import ...`` from tests in this folder.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, report

from steward.jobmanager.leader.graph_checks import AdoptedGraphs
from steward.jobmanager.manager import JobManager
from steward.store.job_graphs import JobGraphStore
from steward.wire.heartbeat import AttemptReport, StartAttempt
from steward.wire.jobs import JobGraphPointer
from steward.wire.records import ExecutionLease
from steward.wire.runner_protocol import FailedEvent
from steward.wire.states import AttemptPhase

STARTED_AT = 1_700_000_000.0


def leased_on(
    cluster: JobManagerCluster,
    leader: JobManager,
    job_ids: Sequence[str],
    *,
    leased: int | None = None,
) -> PretendTaskManager:
    """``job_ids`` submitted to ``leader``, the first ``leased`` (default: all) with attempt 1
    holding its lease on a pretend TaskManager ``tm-1``."""
    tm = PretendTaskManager(cluster, "tm-1", slots=len(job_ids)).register()
    for job_id in job_ids:
        cluster.submitted(leader, job_id)
    for job_id in job_ids[:leased]:
        lease = ExecutionLease(taskmanager=tm.id, attempt=1, epoch=1)
        tm.zk.create(cluster.layout.execution(job_id), lease.to_json(), ephemeral=True)
    return tm


def leased_jobs(
    cluster: JobManagerCluster,
    job_ids: Sequence[str],
    *,
    leased: int | None = None,
    **overrides: object,
) -> PretendTaskManager:
    """:func:`leased_on` a first leader (started with ``overrides``), which then stops (its
    successor takes over)."""
    leader = cluster.start_leader("jm-1", **overrides)
    tm = leased_on(cluster, leader, job_ids, leased=leased)
    leader.stop()
    return tm


def running_behind_lease(
    cluster: JobManagerCluster, leader: JobManager, tm: PretendTaskManager, job_id: str, **spec: Any
) -> StartAttempt:
    """``job_id`` submitted to ``leader`` and its first attempt RUNNING on ``tm``, behind the
    execution lease a real TaskManager takes before it spawns the runner."""
    cluster.submitted(leader, job_id, **spec)
    start, _ = tm.wait_command(leader, StartAttempt, job_id)
    lease = ExecutionLease(taskmanager=tm.id, attempt=start.attempt, epoch=start.epoch)
    tm.zk.create(cluster.layout.execution(job_id), lease.to_json(), ephemeral=True)
    tm.heartbeat(leader, report(start, AttemptPhase.RUNNING))
    cluster.wait_state(leader, job_id, "RUNNING")
    return start


def running_report(job_id: str, started_at: float = STARTED_AT) -> AttemptReport:
    """The TaskManager's report that the adopted attempt 1 of ``job_id`` runs."""
    return AttemptReport(
        job_id=job_id, attempt=1, epoch=1, phase=AttemptPhase.RUNNING, pid=1, started_at=started_at
    )


def ended_report(job_id: str, outcome: FailedEvent) -> AttemptReport:
    """The TaskManager's report that the adopted attempt 1 of ``job_id`` ended with ``outcome``."""
    return running_report(job_id).model_copy(
        update={
            "phase": AttemptPhase.ENDED,
            "ended_at": STARTED_AT + 100,
            "outcome": outcome,
            "lease_released": True,
        }
    )


def graph_reads(monkeypatch: pytest.MonkeyPatch, *, thread: str = "") -> list[str]:
    """The ids of the job graphs read from now on by the threads whose name contains
    ``thread`` (default: any thread; ``"recover"``: recovery's own reads, not those made once
    the term is ready by :mod:`steward.jobmanager.leader.graph_checks`)."""
    reads: list[str] = []
    real = JobGraphStore.graph_at

    def counted(store: JobGraphStore, job_id: str, pointer: JobGraphPointer) -> Any:
        if thread in threading.current_thread().name:
            reads.append(job_id)
        return real(store, job_id, pointer)

    monkeypatch.setattr(JobGraphStore, "graph_at", counted)
    return reads


def no_background_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hold back the graph reads made once the term is ready, so that the test's own event
    (an attempt's end, a placement) is the first need of a job's graph."""
    monkeypatch.setattr(AdoptedGraphs, "run", lambda graphs: None)
