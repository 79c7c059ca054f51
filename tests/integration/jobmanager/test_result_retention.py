"""Results for years through in-process JobManagers on a real ZooKeeper (rule 7): bodies in
blob storage behind a small index, entries an older version kept whole in ZooKeeper migrated
by the leader, and the retention policy (jobmanager.results.*) applied by its rounds."""

from __future__ import annotations

import time

import pytest
from jobmanager_harness import JobManagerCluster

from steward.store.blob import sha256_hex
from steward.store.result_index import body_key
from steward.wire.records import ErrorInfo, JobResultEntry, JobResultIndex
from steward.wire.states import CleanupStatus, TerminalState
from support import wait_until

pytestmark = pytest.mark.zookeeper

DAY = 86_400.0
ROUND = 10.0
"""Seconds within which a leader's first result round (migration, retention) is done."""


def _legacy(
    cluster: JobManagerCluster, job_id: str, *, days_ago: float = 0.0, clean: bool = True
) -> JobResultEntry:
    """Write a result as a version before blob-stored results did: the whole entry."""
    entry = JobResultEntry(
        job_id=job_id,
        state=TerminalState.FAILED,
        status=CleanupStatus.CLEAN if clean else CleanupStatus.DIRTY,
        value={"rows": 3},
        error=ErrorInfo(type="ValueError", message=f"bad input of {job_id}"),
        finished_at=time.time() - days_ago * DAY,
        epoch=1,
    )
    cluster.zk.create(cluster.layout.result(job_id), entry.to_json(), makepath=True)
    return entry


def _index(cluster: JobManagerCluster, job_id: str) -> JobResultIndex | None:
    data = cluster.data(cluster.layout.result(job_id))
    if data is None or b'"job_id"' in data:
        return None  # gone, or not migrated yet
    return JobResultIndex.from_json(data)


def test_a_terminated_jobs_result_is_a_blob_behind_a_small_index_and_the_id_is_never_rerun(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader()
    cluster.submitted(leader, "job-1")
    assert cluster.post(leader, "/v1/jobs/job-1/cancel").status_code == 202
    result = cluster.wait_result_clean(leader, "job-1")

    index = _index(cluster, "job-1")
    assert index is not None and index.state is TerminalState.CANCELED
    assert (cluster.storage / body_key("job-1", index.sha256)).is_file()
    assert result["state"] == "CANCELED"
    again = cluster.submit(leader, "job-1")
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "job_terminated"


def test_a_new_leader_migrates_results_kept_whole_in_zookeeper_and_reads_both_meanwhile(
    cluster: JobManagerCluster,
) -> None:
    clean = _legacy(cluster, "job-clean")
    dirty = _legacy(cluster, "job-dirty", clean=False)
    leader = cluster.start_leader()

    def migrated() -> bool:
        return all(_index(cluster, job_id) is not None for job_id in ("job-clean", "job-dirty"))

    wait_until(migrated, ROUND, "both results migrated to blob storage")
    for entry in (clean, dirty):
        index = _index(cluster, entry.job_id)
        assert index is not None
        assert index.sha256 == sha256_hex(entry.to_json())
        answer = cluster.get(leader, f"/v1/jobs/{entry.job_id}/result")
        assert answer.status_code == 200, answer.text
        assert answer.json()["value"] == {"rows": 3}
    assert cluster.wait_result_clean(leader, "job-dirty")["state"] == "FAILED"  # cleanup ran
    again = cluster.submit(leader, "job-clean")
    assert again.status_code == 409, again.text


def test_retention_removes_old_clean_results_and_their_ids_may_be_submitted_again(
    cluster: JobManagerCluster,
) -> None:
    _legacy(cluster, "job-ancient", days_ago=400)
    _legacy(cluster, "job-old", days_ago=40)
    _legacy(cluster, "job-recent", days_ago=1)
    leader = cluster.start_leader(
        **{"jobmanager.results.max-age": "30d", "jobmanager.results.check-interval": "1s"}
    )

    body = cluster.storage / "results" / "job-old"

    def removed() -> bool:
        # The index entry goes first, then the body (never an entry naming a missing body):
        # both are gone once the round is done.
        gone = not body.exists() or not any(body.iterdir())
        return cluster.children(cluster.layout.results) == ["job-recent"] and gone

    wait_until(removed, ROUND, "the results older than 30 days removed, bodies too")
    assert cluster.get(leader, "/v1/jobs/job-old/result").status_code == 404
    assert cluster.get(leader, "/v1/jobs/job-recent/result").status_code == 200
    assert cluster.submit(leader, "job-old").status_code == 201  # a new job under that id


def test_retention_keeps_at_most_max_count_results_the_newest(
    cluster: JobManagerCluster,
) -> None:
    for age in range(5):
        _legacy(cluster, f"job-{age}", days_ago=age)
    cluster.start_leader(
        **{"jobmanager.results.max-count": "2", "jobmanager.results.check-interval": "1s"}
    )

    def trimmed() -> bool:
        return cluster.children(cluster.layout.results) == ["job-0", "job-1"]

    wait_until(trimmed, ROUND, "only the two newest results kept")
