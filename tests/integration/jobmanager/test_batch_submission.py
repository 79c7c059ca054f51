"""``POST /v1/jobs/batch`` and ``Client.submit_many`` against real JobManagers on a real
ZooKeeper: one answer per item (created, stored before by the same bytes, refused as ``POST
/v1/jobs`` would refuse it), the limits, the auth and submitter rules of the single route, a
standby's forward, and each stored job's graph and fenced pointer."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from jobmanager_harness import PIPELINE, JobManagerCluster, dispatcher_of, submission

from steward.client import Client
from steward.errors import JobExistsError, JobRejectedError
from steward.jobmanager.manager import JobManager
from steward.testing.credentials import admin_record, kit_admin_token
from steward.wire.patterns import MAX_BATCH
from steward.wire.record_format import decode_pointer
from steward.wire.rest import JobView, SubmitRequest

pytestmark = pytest.mark.zookeeper


def _batch(
    cluster: JobManagerCluster,
    manager: JobManager,
    items: list[dict[str, Any]],
    http: httpx.Client | None = None,
) -> httpx.Response:
    return (http or cluster.http).post(
        cluster.url(manager, "/v1/jobs/batch"), json={"submissions": items}
    )


def _digest(item: dict[str, Any]) -> str:
    """What the leader keeps for an item: the sha256 of the item serialised alone."""
    return hashlib.sha256(SubmitRequest.model_validate(item).model_dump_json().encode()).hexdigest()


def test_a_batch_stores_every_job_durably_and_answers_each_in_order(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    items = [submission(f"job-b{n}", args=[str(n)]) for n in range(20)]
    answer = _batch(cluster, leader, items)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [(r["job_id"], r["outcome"], r["status"]) for r in results] == [
        (f"job-b{n}", "created", 201) for n in range(20)
    ]
    graphs = dispatcher_of(leader).stores.graphs
    for n, item in enumerate(items):
        pointer = decode_pointer(
            cluster.data(cluster.layout.jobgraph(f"job-b{n}")) or b"", f"job-b{n}"
        )
        assert pointer.submission_sha256 == _digest(item)
        assert graphs.get(f"job-b{n}").spec.args == [str(n)]
        assert cluster.job(leader, f"job-b{n}")["state"] in ("SCHEDULED", "CREATED")


def test_mixed_items_each_get_their_own_answer_and_nothing_else_changes(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-taken")
    again = submission("job-again")
    assert _batch(cluster, leader, [again]).json()["results"][0]["outcome"] == "created"
    items = [
        submission("job-new"),
        again,  # the same bytes as an earlier batch's item: that submission, stored before
        submission("job-taken", name="another"),  # another job's id: 409
        submission("job-bad", source=b"def main(ctx):\n    return (\n"),  # 400
        submission("job-new", name="twice"),  # the same id twice in one batch: 400
        {"spec": {"job_id": "job-nofile"}},  # no artifact: 400
    ]
    answer = _batch(cluster, leader, items)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    summary = [(r["job_id"], r["outcome"], r["status"]) for r in results]
    assert summary[:5] == [
        ("job-new", "created", 201),
        ("job-again", "exists", 200),
        ("job-taken", "refused", 409),
        ("job-bad", "refused", 400),
        ("job-new", "refused", 400),
    ]
    assert results[2]["error"]["code"] == "job_exists"
    assert "SyntaxError" in results[3]["error"]["message"]
    assert results[4]["error"]["code"] == "duplicate_job_id"
    assert results[1]["job"]["job_id"] == "job-again"
    assert not cluster.exists(cluster.layout.jobgraph("job-bad"))
    assert cluster.job(leader, "job-new")["name"] != "twice"


def test_a_batch_refused_whole_is_stored_nowhere(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    too_many = [submission(f"job-many-{n}") for n in range(MAX_BATCH + 1)]
    answer = _batch(cluster, leader, too_many)
    assert answer.status_code == 413
    assert answer.json()["code"] == "too_large"
    assert f"at most {MAX_BATCH}" in answer.json()["message"]
    for body in ({"submissions": []}, {"jobs": []}, [1, 2]):
        bad = cluster.http.post(cluster.url(leader, "/v1/jobs/batch"), json=body)
        assert bad.status_code == 400, bad.text
        assert bad.json()["code"] == "bad_request"
    assert cluster.children(cluster.layout.jobgraphs) == []


def test_a_batch_needs_a_submitter_and_submits_as_the_caller(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    items = [submission("job-who", submitter="someone-else")]
    with httpx.Client(timeout=15.0) as anonymous:
        answer = _batch(cluster, leader, items, anonymous)
    assert answer.status_code == 401
    viewer = cluster.http.post(
        cluster.url(leader, "/v1/tokens"), json={"name": "reader", "role": "viewer"}
    )
    assert viewer.status_code == 201, viewer.text
    headers = {"authorization": f"Bearer {viewer.json()['token']}"}
    with httpx.Client(timeout=15.0, headers=headers) as reader:
        answer = _batch(cluster, leader, items, reader)
    assert answer.status_code == 403
    assert not cluster.exists(cluster.layout.jobgraph("job-who"))

    created = _batch(cluster, leader, items).json()["results"][0]
    assert created["outcome"] == "created"
    assert cluster.job(leader, "job-who")["submitter"] == admin_record(kit_admin_token()).name


def test_a_standby_forwards_a_batch_to_the_leader(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    answer = _batch(cluster, standby, [submission("job-fwd-1"), submission("job-fwd-2")])
    assert answer.status_code == 200, answer.text
    assert answer.json()["served_by"] == "jm-1"
    assert [r["outcome"] for r in answer.json()["results"]] == ["created", "created"]


def test_submit_many_submits_each_job_once_and_says_what_became_of_each(
    cluster: JobManagerCluster, tmp_path: Path
) -> None:
    leader = cluster.start_leader("jm-1")
    pipeline = tmp_path / "stw_many_pipeline.py"
    pipeline.write_bytes(PIPELINE)
    cluster.submitted(leader, "job-m-taken")
    jobs = [{"job_id": f"job-m-{n}", "args": [str(n)]} for n in range(7)]
    jobs.append({"job_id": "job-m-taken"})
    with Client([cluster.url(leader, "")], timeout=30) as client:
        outcomes = client.submit_many(pipeline, jobs, batch_size=3)
        assert [o.job_id for o in outcomes[:7] if isinstance(o, JobView)] == [
            f"job-m-{n}" for n in range(7)
        ]
        assert isinstance(outcomes[7], JobExistsError)
        # The same jobs again: every one is this very submission, stored before.
        again = client.submit_many(pipeline, jobs[:7], batch_size=50)
        assert [o.job_id for o in again if isinstance(o, JobView)] == [
            j["job_id"] for j in jobs[:7]
        ]
        with pytest.raises(JobRejectedError):
            client.submit_many(pipeline, [{"job_id": "job-m-x", "slots": 0}])
    assert dispatcher_of(leader).stores.graphs.get("job-m-4").spec.args == ["4"]
    assert (
        decode_pointer(cluster.data(cluster.layout.jobgraph("job-m-6")) or b"", "job-m-6").epoch
        >= 1
    )
