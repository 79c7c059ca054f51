"""Fewer status writes for the leader: no hook round for hookless jobs, batched recovery.

Recovery and failover with many jobs were bound by the status writes the leader makes under
its lock (benchmarks/recovery_scaling.py, cluster_failover.py): a job whose pipeline cannot
define ``initialize`` is now scheduled at once, instead of INITIALIZING, a trip through the
hook pool (a blob read) and a second write; and a new leader writes the recovered jobs'
records in batched transactions before it is ready. These tests pin the behaviour both keep.
"""

from __future__ import annotations

import pytest
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.store.statuses import BATCH
from steward.wire.record_format import decode_status
from steward.wire.records import JobStatusRecord
from support import wait_until

pytestmark = pytest.mark.zookeeper

HOOKED = b"def initialize(ctx):\n    return None\n\ndef main(ctx):\n    return 1\n"


def test_a_hookless_job_is_scheduled_at_submission_without_a_hook_round(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    plain = cluster.submitted(leader, "job-plain")
    hooked = cluster.submitted(leader, "job-hooked", source=HOOKED, filename="stw_hooked.py")
    assert plain["state"] == "SCHEDULED"
    assert hooked["state"] == "INITIALIZING"  # a possible hook still runs first
    cluster.wait_state(leader, "job-hooked", "SCHEDULED")
    # (the next scheduling pass says why it waits)
    wait_until(
        lambda: (
            cluster.job(leader, "job-hooked")["reason"] == "waiting for a TaskManager to register"
        ),
        10,
        message="the hooked job waits for a TaskManager",
    )
    # The record was created as SCHEDULED: it never went through INITIALIZING.
    data = cluster.data(cluster.layout.job_status("job-plain"))
    assert data is not None
    assert decode_status(data, "job-plain").state.value == "SCHEDULED"


def test_a_recovered_hookless_job_is_scheduled_when_the_leader_is_ready(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    cluster.submitted(leader, "job-plain")
    cluster.wait_state(leader, "job-plain", "SCHEDULED")
    leader.stop()
    cluster.wait_leading(standby)
    view = dispatcher_of(standby).view("job-plain")
    assert view is not None
    assert view.state.value == "SCHEDULED"


def test_recovery_rewrites_every_status_record_with_the_new_epoch(
    cluster: JobManagerCluster,
) -> None:
    """More jobs than one batch (statuses.BATCH): each record comes to carry the new leader's
    epoch (written after the term is ready, by leader/late_records.py: test_late_records.py
    shows it is ready first), and the jobs stay SCHEDULED."""
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    job_ids = [f"job-{n:03d}" for n in range(BATCH + 10)]
    for job_id in job_ids:
        cluster.submitted(leader, job_id)
    leader.stop()
    cluster.wait_leading(standby)
    epoch = dispatcher_of(standby).epoch

    def stored(job_id: str) -> JobStatusRecord:
        data = cluster.data(cluster.layout.job_status(job_id))
        assert data is not None, job_id
        return decode_status(data, job_id)

    wait_until(
        lambda: all(stored(job_id).epoch == epoch for job_id in job_ids),
        30,
        message="every record rewritten by the new leader",
    )
    assert {stored(job_id).state.value for job_id in job_ids} == {"SCHEDULED"}
