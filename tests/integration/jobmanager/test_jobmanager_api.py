"""The REST API of in-process JobManagers on a real ZooKeeper, with no TaskManager.

Any JobManager answers; a standby forwards writes to the leader and serves reads from
ZooKeeper. Without a TaskManager a job waits in SCHEDULED with the reason shown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jobmanager_harness import (
    PIPELINE,
    JobManagerCluster,
    b64,
    dispatcher_of,
    submission,
    zipped,
)

from steward.client import Client
from steward.errors import JobRejectedError
from steward.jobmanager.rest.jobs_submit import submission_bytes
from steward.store.blob import BlobStore
from steward.testing.credentials import auth_headers
from steward.wire.jobs import JobGraph
from steward.wire.record_format import decode_pointer, decode_status
from support import wait_until

pytestmark = pytest.mark.zookeeper

WAITING = "waiting for a TaskManager to register"
ARTIFACT_LIMIT = 1 << 20
"""The size tests' ``jobmanager.artifact.max-size``: the default's code path, a 64th of its
bytes (each 64 MiB was seconds of the interpreter lock taken from the in-process leader's
ZooKeeper session, which a loaded machine stretched past the client's timeout)."""
LIMITED = {"jobmanager.artifact.max-size": str(ARTIFACT_LIMIT)}


def test_openapi_health_and_cluster_on_leader_and_standby(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)

    spec = cluster.get(standby, "/openapi.json")
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    for path, method in [
        ("/v1/jobs", "post"),
        ("/v1/jobs", "get"),
        ("/v1/jobs/{job_id}", "get"),
        ("/v1/jobs/{job_id}/cancel", "post"),
        ("/v1/jobs/{job_id}/result", "get"),
        ("/v1/cluster", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/internal/v1/heartbeat", "post"),
    ]:
        assert method in paths.get(path, {}), f"{method.upper()} {path} missing from OpenAPI"

    # A standby is ready once its crash detector has seen the leader alive (a probe away)
    wait_until(lambda: cluster.get(standby, "/readyz").status_code == 200, 10)
    for manager, role in ((leader, "leader"), (standby, "standby")):
        health = cluster.get(manager, "/healthz")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "id": manager.id, "role": role}
        ready = cluster.get(manager, "/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"ready": True, "id": manager.id, "role": role}

    epoch = dispatcher_of(leader).epoch
    for manager in (leader, standby):
        response = cluster.get(manager, "/v1/cluster")
        assert response.status_code == 200
        view = response.json()
        assert view["cluster_id"] == cluster.cluster_id
        assert view["served_by"] == manager.id
        assert view["leader"] == {"id": "jm-1", "address": leader.address, "epoch": epoch}
        assert sorted((jm["id"], jm["address"], jm["leader"]) for jm in view["jobmanagers"]) == [
            ("jm-1", leader.address, True),
            ("jm-2", standby.address, False),
        ]
        assert view["taskmanagers"] == []


def test_submit_to_leader_and_to_standby(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)

    direct = cluster.submit(leader, "job-direct", name="direct", args=["a", "b"])
    assert direct.status_code == 201, direct.text
    assert direct.json()["job_id"] == "job-direct"
    assert direct.json()["served_by"] == "jm-1"
    forwarded = cluster.submit(standby, "job-forwarded")
    assert forwarded.status_code == 201, forwarded.text
    assert forwarded.json()["served_by"] == "jm-1"  # the leader carried it out
    generated = cluster.submit(standby, None, filename="stw_nightly_report.py")
    assert generated.status_code == 201, generated.text
    generated_id = generated.json()["job_id"]
    assert generated_id.startswith("stw_nightly_report-")

    epoch = dispatcher_of(leader).epoch
    for job_id in ("job-direct", "job-forwarded", generated_id):
        pointer_data = cluster.data(cluster.layout.jobgraph(job_id))
        assert pointer_data is not None, f"no job graph pointer for {job_id}"
        pointer = decode_pointer(pointer_data, job_id)
        assert pointer.epoch == epoch
        assert (cluster.storage / pointer.blob).is_file()
        # The leader persists the status record, and the standby reads it from there.
        status = cluster.data(cluster.layout.job_status(job_id))
        assert status is not None, f"no status record for {job_id}"
        assert decode_status(status, job_id).job_id == job_id
        view = cluster.wait_state(standby, job_id, "SCHEDULED", reason=WAITING)
        assert view["served_by"] == "jm-2"

    listed = cluster.get(standby, "/v1/jobs")
    assert listed.status_code == 200
    assert {job["job_id"] for job in listed.json()["jobs"]} == {
        "job-direct",
        "job-forwarded",
        generated_id,
    }
    on_leader = cluster.job(leader, "job-direct")
    assert on_leader["name"] == "direct"
    assert on_leader["state"] == "SCHEDULED"
    assert on_leader["reason"] == WAITING


def test_bad_submissions_are_refused_and_nothing_is_stored(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    syntax_error = b"def main(ctx):\n    return (\n"
    no_entry = zipped({"lib/helpers.py": b"X = 1\n", "lib/more.py": b"Y = 2\n"})
    good = b64(PIPELINE)

    def with_artifact(filename: str, data_b64: str, **spec: object) -> dict[str, object]:
        return {
            "spec": {"job_id": "job-bad", **spec},
            "artifact": {"filename": filename, "data_b64": data_b64},
        }

    cases: dict[str, object] = {
        "invalid job id": with_artifact("stw_p.py", good, job_id="bad id!"),
        "zero slots": with_artifact("stw_p.py", good, slots=0),
        "bad entrypoint": with_artifact("stw_p.py", good, entrypoint="not valid()"),
        "unknown spec field": with_artifact("stw_p.py", good, colour="blue"),
        "unknown restart": with_artifact("stw_p.py", good, restart_strategy={"kind": "x"}),
        "bad base64": with_artifact("stw_p.py", "%%% not base64 %%%"),
        "a .txt artifact": with_artifact("notes.txt", b64(b"hello")),
        "a .py with a syntax error": with_artifact("stw_p.py", b64(syntax_error)),
        "a zip without an entry module": with_artifact("stw_p.zip", b64(no_entry)),
        "a corrupt zip": with_artifact("stw_p.zip", b64(b"PK not really a zip")),
        "no artifact": {"spec": {"job_id": "job-bad"}},
        "cluster deploy mode": {
            **with_artifact("stw_p.py", good),
            "options": {"deploy-mode": "cluster"},
        },
        "an unknown spark-submit option": {
            **with_artifact("stw_p.py", good),
            "options": {"supervise": "true"},
        },
    }
    for manager in (leader, standby):
        for what, body in cases.items():
            response = cluster.post(manager, "/v1/jobs", body)
            assert response.status_code == 400, f"{what} via {manager.id}: {response.text}"
            error = response.json()
            assert error["code"] == "bad_request", what
            assert error["message"], what
        not_json = cluster.http.post(
            cluster.url(manager, "/v1/jobs"),
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert not_json.status_code == 400, not_json.text

    assert cluster.children(cluster.layout.jobgraphs) == []
    assert cluster.children(cluster.layout.jobs) == []
    assert cluster.children(cluster.layout.results) == []
    assert cluster.blob_files() == []
    assert cluster.get(leader, "/v1/jobs").json()["jobs"] == []
    # The messages name the problem.
    syntax = cluster.post(leader, "/v1/jobs", cases["a .py with a syntax error"]).json()
    assert "SyntaxError" in syntax["message"]
    kind = cluster.post(leader, "/v1/jobs", cases["a .txt artifact"]).json()
    assert ".py" in kind["message"]
    cluster_mode = cluster.post(leader, "/v1/jobs", cases["cluster deploy mode"]).json()
    assert "client mode" in cluster_mode["message"]


def test_spark_submit_options_set_their_spark_keys_over_the_specs(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    body = submission(
        "job-options", spark_conf={"spark.driver.memory": "1g", "spark.executor.cores": "2"}
    )
    body["options"] = {
        "driverMemory": "3g",  # Livy's spelling
        "master": "spark://spark-master:7077",
        "num-executors": "4",
        "deploy_mode": "client",
        "name": "nightly",
    }

    response = cluster.post(leader, "/v1/jobs", body)

    assert response.status_code == 201, response.text
    assert response.json()["name"] == "nightly"
    pointer = decode_pointer(
        cluster.data(cluster.layout.jobgraph("job-options")) or b"", "job-options"
    )
    graph = JobGraph.from_json(BlobStore(cluster.storage.as_uri()).get(pointer.blob))
    assert graph.spec.spark_conf == {
        "spark.driver.memory": "3g",  # the option wins, as on spark-submit's command line
        "spark.executor.cores": "2",
        "spark.master": "spark://spark-master:7077",
        "spark.executor.instances": "4",
        "spark.app.name": "nightly",
    }


def test_duplicates_cancel_result_and_resubmission(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    cluster.submitted(leader, "job-a")
    blobs_before = cluster.blob_files()

    for manager in (leader, standby):
        duplicate = cluster.submit(manager, "job-a")
        assert duplicate.status_code == 409, duplicate.text
        assert duplicate.json()["code"] == "job_exists"
    assert cluster.blob_files() == blobs_before  # the duplicate's blob was not kept

    live_result = cluster.get(standby, "/v1/jobs/job-a/result")
    assert live_result.status_code == 409
    assert live_result.json()["code"] == "job_not_terminated"

    cancelled = cluster.post(standby, "/v1/jobs/job-a/cancel")
    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["state"] == "CANCELED"
    for manager in (leader, standby):
        view = cluster.job(manager, "job-a")
        assert view["state"] == "CANCELED"
        assert view["result"]["state"] == "CANCELED"

    result = cluster.wait_result_clean(standby, "job-a")
    assert result["job_id"] == "job-a"
    assert result["state"] == "CANCELED"
    assert result["submitted_at"] is not None
    # Cleanup removed the job's HA data; the result (its index and its body) stays.
    assert not cluster.exists(cluster.layout.jobgraph("job-a"))
    assert not cluster.exists(cluster.layout.job("job-a"))
    assert cluster.exists(cluster.layout.result("job-a"))
    body_folder = cluster.storage / "results" / "job-a"
    left = [p for p in cluster.blob_files() if "job-a" in str(p)]
    assert [p.parent for p in left] == [body_folder]

    for manager in (leader, standby):
        again = cluster.submit(manager, "job-a")
        assert again.status_code == 409, again.text
        body = again.json()
        assert body["code"] == "job_terminated"
        assert body["result"]["state"] == "CANCELED"
        assert body["result"]["job_id"] == "job-a"
        cancel_again = cluster.post(manager, "/v1/jobs/job-a/cancel")
        assert cancel_again.status_code == 409, cancel_again.text
        assert cancel_again.json()["code"] == "job_terminated"
    assert not cluster.exists(cluster.layout.jobgraph("job-a"))

    listed = cluster.get(leader, "/v1/jobs").json()["jobs"]
    assert [(job["job_id"], job["state"]) for job in listed] == [("job-a", "CANCELED")]


def test_unknown_job_is_404_on_every_endpoint(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    for manager in (leader, standby):
        for method, path in [
            ("GET", "/v1/jobs/no-such-job"),
            ("GET", "/v1/jobs/no-such-job/result"),
            ("POST", "/v1/jobs/no-such-job/cancel"),
        ]:
            response = cluster.http.request(method, cluster.url(manager, path))
            assert response.status_code == 404, f"{method} {path} on {manager.id}"
            assert response.json()["code"] == "job_not_found", response.text


def test_a_malformed_job_id_in_the_path_is_a_client_error(cluster: JobManagerCluster) -> None:
    """BUG (api.py _job_view / result / cancel -> reads.py, dispatcher.py -> Layout.result ->
    check_job_id): an id that is not a valid job id ("_x", 129+ characters) raises ValueError
    in the handler, which answers 500 Internal Server Error (and uvicorn drops the keep-alive
    connection, so a pooled client sees "connection reset"). It should be 404 job_not_found,
    or 400, like any other id that names no job."""
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    answers = []
    for manager in (leader, standby):
        for bad in ("_underscore-first", "x" * 200):
            for method, path in [
                ("GET", f"/v1/jobs/{bad}"),
                ("GET", f"/v1/jobs/{bad}/result"),
                ("POST", f"/v1/jobs/{bad}/cancel"),
            ]:
                # A connection of its own each: a 500 closes the connection it came on.
                response = httpx.request(
                    method, cluster.url(manager, path), timeout=15.0, headers=auth_headers()
                )
                answers.append((manager.id, method, path[:30], response.status_code))
    wrong = [answer for answer in answers if answer[3] not in (400, 404)]
    assert wrong == [], f"not a client error: {wrong}"


def test_standby_without_a_leader_reads_and_answers_503_to_writes(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-a")
    cluster.wait_state(leader, "job-a", "SCHEDULED")
    # Behind the leader: a contender that will never lead, then the standby.
    squatter = cluster.fake_latch_holder()
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    leader.stop()
    # The squatter is first in line now and never publishes leader/info: nobody leads.
    wait_until(lambda: standby.leader() is None, 10.0, message="jm-2 sees no leader")
    assert not standby.is_leader

    view = cluster.job(standby, "job-a")
    assert view["state"] == "SCHEDULED"
    assert view["served_by"] == "jm-2"
    jobs = cluster.get(standby, "/v1/jobs")
    assert jobs.status_code == 200
    assert [job["job_id"] for job in jobs.json()["jobs"]] == ["job-a"]
    info = cluster.get(standby, "/v1/cluster")
    assert info.status_code == 200
    assert info.json()["leader"] is None
    assert {jm["id"] for jm in info.json()["jobmanagers"]} == {"jm-squatter", "jm-2"}
    assert cluster.get(standby, "/healthz").json()["role"] == "standby"
    not_ready = cluster.get(standby, "/readyz")
    assert not_ready.status_code == 503
    assert not_ready.json()["code"] == "no_leader"

    for method, path, body in [
        ("POST", "/v1/jobs", submission("job-b")),
        ("POST", "/v1/jobs/job-a/cancel", None),
    ]:
        response = cluster.http.request(
            method, cluster.url(standby, path), content=json.dumps(body) if body else None
        )
        assert response.status_code == 503, f"{method} {path}: {response.text}"
        assert response.headers.get("retry-after") == "1"
        assert response.json()["code"] == "no_leader"
    assert not cluster.exists(cluster.layout.jobgraph("job-b"))

    # The squatter goes away: the standby leads and recovers the job.
    squatter.stop()
    squatter.close()
    cluster.wait_leading(standby)
    assert cluster.wait_state(standby, "job-a", "SCHEDULED")["served_by"] == "jm-2"


def test_a_submission_over_the_limit_is_refused_without_being_stored(
    cluster: JobManagerCluster,
) -> None:
    big = json.dumps(submission("job-big", source=b"#" * (ARTIFACT_LIMIT + 1))).encode()
    leader = cluster.start_leader("jm-1", **LIMITED)
    # Under the body's limit, so the leader reads and decodes it all before it refuses.
    assert len(big) < submission_bytes(ARTIFACT_LIMIT)
    answer = cluster.http.post(
        cluster.url(leader, "/v1/jobs"), content=big, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    assert answer.json()["code"] == "too_large"
    assert not cluster.exists(cluster.layout.jobgraph("job-big"))
    assert cluster.blob_files() == []


def test_an_endless_submission_is_cut_off_at_the_limit_not_read_to_its_end(
    cluster: JobManagerCluster,
) -> None:
    """No Content-Length (chunked): the leader stops reading once the limit is passed, instead
    of holding everything a client sends in memory."""
    leader = cluster.start_leader("jm-1", **{"jobmanager.artifact.max-size": "8m"})
    limit = submission_bytes(8 << 20)
    chunk = b"x" * (1024 * 1024)
    sent = 0
    endless = 4 * limit

    def body() -> Iterator[bytes]:
        nonlocal sent
        while sent < endless:
            sent += len(chunk)
            yield chunk

    try:
        answer = cluster.http.post(
            cluster.url(leader, "/v1/jobs"),
            content=body(),
            headers={"content-type": "application/json"},
        )
    except httpx.TransportError:
        pass  # the server may close the connection while the client is still sending
    else:
        assert answer.status_code == 413
    # What the kernel's socket buffers hold beyond the limit is small next to the rest.
    assert sent < 2 * limit
    assert cluster.get(leader, "/readyz").status_code == 200


@pytest.mark.parametrize("size", [ARTIFACT_LIMIT + 1024, 2 * ARTIFACT_LIMIT])
def test_the_client_says_a_pipeline_is_too_large(
    cluster: JobManagerCluster, tmp_path: Path, size: int
) -> None:
    """Just over the artifact limit (the leader decodes it, then refuses) and far over it (the
    body is refused from its Content-Length, while the client is still sending): the same
    clear error, no retries against other JobManagers, nothing stored."""
    leader = cluster.start_leader("jm-1", **LIMITED)
    folder = tmp_path / "big-pipeline"
    folder.mkdir()
    (folder / "main.py").write_text("def main(ctx):\n    return 1\n")
    (folder / "model.bin").write_bytes(os.urandom(size))  # random: the zip does not shrink it
    refused = pytest.raises(JobRejectedError, match=f"limited to {ARTIFACT_LIMIT} bytes")
    with Client([cluster.url(leader, "")], timeout=30) as client, refused:
        client.submit(folder, job_id="big")
    assert not cluster.exists(cluster.layout.jobgraph("big"))
    assert cluster.blob_files() == []
