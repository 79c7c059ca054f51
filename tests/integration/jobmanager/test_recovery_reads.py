"""A new leader reads its jobs' ZooKeeper state in batches, never job by job.

Recovery's time is failover's time: a read per job per store cost a round trip each, so 10,000
jobs waited on tens of thousands of them (issue 22). The pointers, status records, leases and
registrations are read in batches (one multiRead per 100 znodes, ``store/zk.py``); only the
graphs' blobs are read job by job. A batch that fails falls back to per-job reads (see
test_recovery_blips.py).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from adoption_harness import leased_jobs
from jobmanager_harness import JobManagerCluster
from kazoo.client import KazooClient

pytestmark = pytest.mark.zookeeper

JOBS = 24
LEASED = 8
PER_JOB = ("jobgraphs", "jobs", "executions", "taskmanagers")
"""Where each job's (and each TaskManager's) own znodes are."""


def test_recovery_reads_no_pointer_record_or_lease_one_request_at_a_time(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_ids = [f"job-{i:02d}" for i in range(JOBS)]
    leased_jobs(cluster, job_ids, leased=LEASED)

    one_by_one: list[str] = []
    real_get = KazooClient.get

    def counted(client: KazooClient, path: str, watch: Any = None) -> Any:
        if "recover" in threading.current_thread().name and any(
            f"/{part}/" in path for part in PER_JOB
        ):
            one_by_one.append(path)
        return real_get(client, path, watch)

    monkeypatch.setattr(KazooClient, "get", counted)
    successor = cluster.start_leader("jm-2")

    dispatcher = successor.dispatcher
    assert dispatcher is not None
    summary = dispatcher.recovery_summary
    assert summary is not None
    assert (summary["jobs"], summary["adopted"], summary["failed"]) == (JOBS, LEASED, 0)
    assert one_by_one == [], f"{len(one_by_one)} reads made one at a time: {one_by_one[:5]}"
