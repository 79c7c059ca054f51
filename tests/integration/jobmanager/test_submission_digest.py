"""A duplicate submission says which submission made the job (issue 23, item 4): the 409
``job_exists`` carries the sha256 of the body that created it, on the leader, through a
standby, and after a failover (the digest lives in the job graph's pointer), so a client that
retries the same body recognises its own job and one that sends another is refused.

Also once the job has ended (issue 24): the result keeps the digest (in its body in blob
storage, not in ZooKeeper's index), so the same body is answered with the result
(``job_terminated``) and another body is refused as for a live job (``job_exists``), through
both submission routes: a task re-run with a changed spec never takes the old result.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, submission

from steward.jobmanager.manager import JobManager
from steward.wire.record_format import decode_pointer
from steward.wire.rest import SubmitRequest

pytestmark = pytest.mark.zookeeper


def _post(cluster: JobManagerCluster, manager: JobManager, body: bytes) -> tuple[int, Any]:
    answer = cluster.http.post(
        cluster.url(manager, "/v1/jobs"),
        content=body,
        headers={"content-type": "application/json"},
    )
    return answer.status_code, answer.json()


def test_job_exists_carries_the_digest_of_the_submission_that_made_the_job(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    body = json.dumps(submission("job-d")).encode()
    digest = hashlib.sha256(body).hexdigest()

    assert _post(cluster, leader, body)[0] == 201
    pointer = decode_pointer(cluster.data(cluster.layout.jobgraph("job-d")) or b"", "job-d")
    assert pointer.submission_sha256 == digest

    other = json.dumps(submission("job-d", name="another")).encode()
    for manager in (leader, standby):
        for sent in (body, other):
            status, answer = _post(cluster, manager, sent)
            assert (status, answer["code"]) == (409, "job_exists")
            assert answer["submission_sha256"] == digest

    # A leader elected later knows it too: it recovered the job from the pointer.
    leader.stop()
    cluster.wait_leading(standby)
    status, answer = _post(cluster, standby, body)
    assert (status, answer.get("submission_sha256")) == (409, digest)


def _ended(cluster: JobManagerCluster, manager: JobManager, body: bytes, job_id: str) -> None:
    """Submit ``body`` and cancel the job (no TaskManager: it ends at once), its result CLEAN."""
    assert _post(cluster, manager, body)[0] == 201
    assert cluster.post(manager, f"/v1/jobs/{job_id}/cancel").status_code == 202
    cluster.wait_result_clean(manager, job_id)


def test_an_ended_job_answers_its_own_body_with_its_result_and_another_with_job_exists(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    body = json.dumps(submission("job-e")).encode()
    digest = hashlib.sha256(body).hexdigest()
    _ended(cluster, leader, body, "job-e")
    other = json.dumps(submission("job-e", args=["changed"])).encode()
    for manager in (leader, standby):
        status, answer = _post(cluster, manager, body)
        assert (status, answer["code"]) == (409, "job_terminated"), answer
        assert answer["result"]["state"] == "CANCELED"
        assert answer["submission_sha256"] == digest
        status, answer = _post(cluster, manager, other)
        assert (status, answer["code"]) == (409, "job_exists"), answer
        assert answer["submission_sha256"] == digest
        assert "CANCELED job submitted with another body" in answer["message"]
    index = cluster.data(cluster.layout.result("job-e")) or b""
    assert 0 < len(index) < 200 and digest.encode() not in index, index
    assert [job["job_id"] for job in cluster.get(leader, "/v1/jobs").json()["jobs"]] == ["job-e"]


def test_a_batch_item_changed_since_its_job_ended_is_refused_with_job_exists(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    item = submission("job-f")
    digest = hashlib.sha256(SubmitRequest.model_validate(item).model_dump_json().encode())
    batch = cluster.url(leader, "/v1/jobs/batch")
    assert cluster.http.post(batch, json={"submissions": [item]}).status_code == 200
    assert cluster.post(leader, "/v1/jobs/job-f/cancel").status_code == 202
    cluster.wait_result_clean(leader, "job-f")
    changed = submission("job-f", args=["changed"])
    answers = [cluster.http.post(batch, json={"submissions": [sent]}) for sent in (item, changed)]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    same, other = (a.json()["results"][0] for a in answers)
    assert (same["outcome"], same["status"], same["error"]["code"]) == (
        "refused",
        409,
        "job_terminated",
    )
    assert (other["outcome"], other["status"], other["error"]["code"]) == (
        "refused",
        409,
        "job_exists",
    )
    assert other["error"]["submission_sha256"] == digest.hexdigest()
