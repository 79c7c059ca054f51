"""``high-availability.record-format`` on a real ZooKeeper (issue 22): a leader at format 2
writes the short records and a successor adopts its running attempts from them; records of
format 1, written before the switch, are still read and adopted after it; and a record of a
newer schema than this release reads is refused, loudly, without failing its job.
"""

from __future__ import annotations

import json
import logging

import pytest
from adoption_harness import leased_jobs
from jobmanager_harness import SETTLE, JobManagerCluster, dispatcher_of

from steward.jobmanager.manager import JobManager
from support import wait_until

pytestmark = pytest.mark.zookeeper

FORMAT = "high-availability.record-format"
JOBS = 3


def _schemas(cluster: JobManagerCluster, job_id: str) -> tuple[int, int]:
    """The schema of the job's status record and of its graph pointer, as stored."""
    status = json.loads(cluster.data(cluster.layout.job_status(job_id)) or b"{}")
    pointer = json.loads(cluster.data(cluster.layout.jobgraph(job_id)) or b"{}")
    return status.get("schema"), pointer.get("schema")


def _adopted_all(successor: JobManager, cluster: JobManagerCluster, job_ids: list[str]) -> None:
    summary = dispatcher_of(successor).recovery_summary
    assert (summary["adopted"], summary["failed"]) == (len(job_ids), 0)
    for job_id in job_ids:
        job = cluster.job(successor, job_id)
        assert job["state"] == "RUNNING", job
        assert job["attempts"][-1]["number"] == 1


def test_at_format_2_the_records_are_short_and_a_successor_adopts_every_attempt(
    cluster: JobManagerCluster,
) -> None:
    job_ids = [f"job-{n}" for n in range(JOBS)]
    leased_jobs(cluster, job_ids)  # the default format: 2
    for job_id in job_ids:
        assert _schemas(cluster, job_id) == (2, 2)
        assert job_id.encode() not in (cluster.data(cluster.layout.job_status(job_id)) or b"")

    successor = cluster.start_leader("jm-2")

    _adopted_all(successor, cluster, job_ids)
    for job_id in job_ids:
        assert cluster.job(successor, job_id)["attempts"][-1]["adopted_by"] == [2]
        assert _schemas(cluster, job_id) == (2, 2)


def test_records_of_format_1_are_adopted_after_the_switch_to_2_and_again_after_that(
    cluster: JobManagerCluster,
) -> None:
    job_ids = [f"job-{n}" for n in range(JOBS)]
    leased_jobs(cluster, job_ids, **{FORMAT: 1})
    for job_id in job_ids:
        assert _schemas(cluster, job_id) == (1, 1)

    # The rolling upgrade's second roll: the next leader writes format 2.
    second = cluster.start_leader("jm-2", **{FORMAT: 2})
    _adopted_all(second, cluster, job_ids)
    for job_id in job_ids:
        # Its adoption rewrote each status record; the pointers stay as they were written.
        assert _schemas(cluster, job_id) == (2, 1)
    second.stop()

    # A mix of both formats in one job is read too (and by a leader still at format 1).
    third = cluster.start_leader("jm-3", **{FORMAT: 1})
    _adopted_all(third, cluster, job_ids)
    for job_id in job_ids:
        assert cluster.job(third, job_id)["attempts"][-1]["adopted_by"] == [2, 3]
        assert _schemas(cluster, job_id) == (1, 1)


def test_a_record_of_a_newer_schema_is_refused_and_its_job_neither_failed_nor_dropped(
    cluster: JobManagerCluster, caplog: pytest.LogCaptureFixture
) -> None:
    newer, kept = "job-newer", "job-kept"
    leased_jobs(cluster, [newer, kept])
    status_path = cluster.layout.job_status(newer)
    future = b'{"schema":3,"what":"a release after this one"}'
    cluster.zk.set(cluster.layout.jobgraph(newer), future)
    cluster.zk.set(status_path, future)
    caplog.set_level(logging.WARNING)

    cluster.start("jm-2")

    wait_until(
        lambda: any(
            "job recovery waits job=job-newer" in r.getMessage()
            and "schema 3 was written by a newer Steward" in r.getMessage()
            for r in caplog.records
        ),
        SETTLE,
        message="the successor says why it cannot recover the job",
    )
    # Refused, not judged: no verdict recorded, nothing of the job removed or overwritten.
    assert cluster.data(cluster.layout.result(newer)) is None
    assert cluster.data(cluster.layout.jobgraph(newer)) == future
    assert cluster.data(status_path) == future
    assert cluster.data(cluster.layout.execution(newer)) is not None
    assert not any(
        "recovery of one job failed job=job-newer" in r.getMessage() for r in caplog.records
    )
