"""A duplicate submission says which submission made the job (issue 23, item 4): the 409
``job_exists`` carries the sha256 of the body that created it, on the leader, through a
standby, and after a failover (the digest lives in the job graph's pointer), so a client that
retries the same body recognises its own job and one that sends another is refused.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, submission

from steward.jobmanager.manager import JobManager
from steward.wire.jobs import JobGraphPointer

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
    pointer = JobGraphPointer.from_json(cluster.data(cluster.layout.jobgraph("job-d")) or b"")
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
