"""A heartbeat's news is written in one batched transaction, not a round trip per attempt.

After a failover every adopted attempt's first RUNNING report is news (its record had no start
time), and each write is made under the job table's lock: one round trip per attempt held that
heartbeat, and every other one, for seconds at 1,000 adopted jobs (issue 22,
``benchmarks/failover_scale.py``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, dispatcher_of

from steward.ha.fencing import FencedTransaction
from steward.wire.heartbeat import AttemptReport
from steward.wire.records import ExecutionLease
from steward.wire.states import AttemptPhase

pytestmark = pytest.mark.zookeeper

JOBS = 6


def test_first_reports_of_adopted_attempts_are_written_in_one_transaction(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1", slots=JOBS).register()
    job_ids = [f"job-{i}" for i in range(JOBS)]
    for job_id in job_ids:
        cluster.submitted(leader, job_id)
        lease = ExecutionLease(taskmanager=tm.id, attempt=1, epoch=1)
        tm.zk.create(cluster.layout.execution(job_id), lease.to_json(), ephemeral=True)
    leader.stop()
    successor = cluster.start_leader("jm-2")
    assert dispatcher_of(successor).recovery_summary["adopted"] == JOBS

    commits: list[str] = []
    real = FencedTransaction.commit_or_failure

    def counted(transaction: FencedTransaction) -> Any:
        commits.append(threading.current_thread().name)
        return real(transaction)

    monkeypatch.setattr(FencedTransaction, "commit_or_failure", counted)
    reports = [
        AttemptReport(
            job_id=job_id,
            attempt=1,
            epoch=1,
            phase=AttemptPhase.RUNNING,
            pid=1,
            started_at=time.time(),
        )
        for job_id in job_ids
    ]
    tm.heartbeat(successor, *reports)

    assert [name for name in commits if "AnyIO" in name] == ["AnyIO worker thread"]
    for job_id in job_ids:
        assert cluster.job(successor, job_id)["state"] == "RUNNING"
