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
from adoption_harness import leased_jobs, running_report
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.ha.fencing import FencedTransaction

pytestmark = pytest.mark.zookeeper

JOBS = 6


def test_first_reports_of_adopted_attempts_are_written_in_one_transaction(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_ids = [f"job-{i}" for i in range(JOBS)]
    tm = leased_jobs(cluster, job_ids)
    successor = cluster.start_leader("jm-2")
    assert dispatcher_of(successor).recovery_summary["adopted"] == JOBS

    commits: list[str] = []
    real = FencedTransaction.commit_or_failure

    def counted(transaction: FencedTransaction) -> Any:
        commits.append(threading.current_thread().name)
        return real(transaction)

    monkeypatch.setattr(FencedTransaction, "commit_or_failure", counted)
    reports = [running_report(job_id, started_at=time.time()) for job_id in job_ids]
    tm.heartbeat(successor, *reports)

    assert [name for name in commits if "AnyIO" in name] == ["AnyIO worker thread"]
    for job_id in job_ids:
        assert cluster.job(successor, job_id)["state"] == "RUNNING"
