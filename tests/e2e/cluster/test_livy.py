"""Livy's batch API through a real cluster, driven by curl exactly as Livy's REST docs do.

``POST /batches`` with ``{"file": ...}``, then ``GET /batches/{id}`` (and ``/state``,
``/log``) until a terminal state; a listing paged by ``from``/``size``; ``DELETE``; bad input
answered 400 naming the field with nothing created; no credentials answered 401. The tests
share one cluster (each counts batch ids from the next one and ends its batches);
``test_livy_failover.py`` kills a leader under a batch.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.livy_batches import (
    QUICK_DEADLINE,
    SPARK_DEADLINE,
    TERMINAL,
    batch_ids,
    curl,
    gated,
    in_state,
    next_batch_id,
    release,
    state_of,
    submit,
    write_jobs,
)
from e2e.module_clusters import module_cluster
from steward.testing.processes import Proc, ProcessCluster
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jobs(tmp_path_factory.mktemp("livy-jobs"))


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble, jobs_dir: Path
) -> Iterator[ProcessCluster]:
    extra = {"jobmanager.livy.allowed-sources": str(jobs_dir)}
    with module_cluster(tmp_path_factory, zookeeper, "livy", slots=3, extra=extra) as cluster:
        yield cluster


@pytest.fixture
def jm(cluster: ProcessCluster) -> Proc:
    (leader,) = cluster.jobmanagers()
    return leader


@pytest.mark.spark
def test_curl_submits_a_pyspark_file_that_runs_to_success(
    cluster: ProcessCluster, jm: Proc, jobs_dir: Path
) -> None:
    body = {
        "file": f"file://{jobs_dir / 'pi.py'}",
        "args": ["2"],
        "name": "pi",
        "driverMemory": "700m",
        "conf": {"spark.master": "local[2]", "spark.ui.enabled": False},
    }
    expected = next_batch_id(jm)
    batch = submit(jm, body)
    batch_id = batch["id"]
    assert batch_id == expected
    assert batch["name"] == "pi"
    assert batch["owner"] and batch["proxyUser"] is None
    assert batch["state"] in {"not_started", "starting", "running"}
    assert set(batch) >= {"id", "name", "owner", "proxyUser", "state", "appId", "appInfo", "log"}
    wait_until(lambda: state_of(jm, batch_id) in TERMINAL, SPARK_DEADLINE, message="batch ended")
    status, final = curl(f"{jm.address}/batches/{batch_id}")
    assert status == 200
    assert final["state"] == "success", final
    assert final["appId"], final
    assert final["appInfo"]["driverLogUrl"].endswith(f"/v1/jobs/livy-{batch_id}/attempts/1/log")
    assert 0 < len(final["log"]) <= 10
    status, logged = curl(f"{jm.address}/batches/{batch_id}/log?size=1000")
    assert status == 200
    assert logged["id"] == batch_id and logged["total"] == len(logged["log"]) + logged["from"]
    assert any(line.startswith("Pi is roughly 3.") for line in logged["log"]), logged
    with cluster.client() as client:
        assert client.result(f"livy-{batch_id}").state.value == "FINISHED"


def test_batches_list_by_offset_and_answer_state_and_log(
    jm: Proc, jobs_dir: Path, tmp_path: Path
) -> None:
    first = next_batch_id(jm)
    ids, gates = [], []
    for name in ("first", "second", "third"):
        body, gate, _output = gated(jobs_dir, tmp_path, name)
        body["conf"] = {
            "spark.executorEnv.GREETING": "hi",
            "spark.yarn.appMasterEnv.GREETING": name,
        }
        ids.append(submit(jm, body)["id"])
        gates.append(gate)
    assert ids == [first, first + 1, first + 2]
    status, page = curl(f"{jm.address}/batches?from={first + 1}&size=1")
    assert status == 200
    assert page["from"] == first + 1 and page["total"] == first + 3
    assert [(s["id"], s["name"]) for s in page["sessions"]] == [(first + 1, "second")]
    status, everything = curl(f"{jm.address}/batches", auth="basic")
    assert status == 200, everything
    assert [s["id"] for s in everything["sessions"]] == list(range(first + 3))
    wait_until(in_state(jm, first, "running"), QUICK_DEADLINE, message="first batch running")
    release(jm, (first, gates[0]))
    status, logged = curl(f"{jm.address}/batches/{first}/log?from=0&size=100")
    assert status == 200 and logged["from"] == 0
    assert any("waiting for" in line for line in logged["log"]), logged
    assert any(line == "done" for line in logged["log"]), logged
    assert "greeting first" in logged["log"], logged  # the driver's own setting wins
    paged = [
        curl(f"{jm.address}/batches/{first}/log?from={n}&size=1")[1] for n in range(logged["total"])
    ]
    assert [line for page in paged for line in page["log"]] == logged["log"]
    assert {page["total"] for page in paged} == {logged["total"]}
    status, tail = curl(f"{jm.address}/batches/{first}/log?size=1")
    assert tail["total"] == logged["total"] and tail["from"] == logged["total"] - 1
    assert len(tail["log"]) == 1
    status, missing = curl(f"{jm.address}/batches/99999")
    assert status == 404 and missing["msg"] == "Session '99999' not found."
    release(jm, (first + 1, gates[1]), (first + 2, gates[2]))


def test_delete_kills_a_running_batch(jm: Proc, jobs_dir: Path, tmp_path: Path) -> None:
    body, _gate, output = gated(jobs_dir, tmp_path, "doomed")
    batch_id = submit(jm, body)["id"]
    wait_until(in_state(jm, batch_id, "running"), QUICK_DEADLINE)
    status, answer = curl(f"{jm.address}/batches/{batch_id}", "-X", "DELETE")
    assert (status, answer) == (200, {"msg": "deleted"})
    wait_until(in_state(jm, batch_id, "killed"), QUICK_DEADLINE, message="killed")
    assert not output.exists()
    status, again = curl(f"{jm.address}/batches/{batch_id}", "-X", "DELETE")
    assert (status, again) == (200, {"msg": "deleted"})


BAD_BATCHES = [
    ({"file": "JOBS/pi.py", "className": "org.apache.spark.examples.SparkPi"}, "className"),
    ({"file": "JOBS/absent.py"}, "file"),
    ({"file": "/etc/passwd"}, "file"),
    ({"file": "JOBS/pi.py", "pyFiles": ["JOBS/../../x.py"]}, "pyFiles[0]"),
    ({"args": ["1"]}, "file"),
    ({"file": "JOBS/pi.py", "numExecutors": "many"}, "numExecutors"),
    ({"file": "JOBS/pi.py", "driverCores": 2, "hostile": 1}, "hostile"),
]


def test_bad_batches_are_400_naming_the_field_and_create_nothing(
    jm: Proc, jobs_dir: Path, tmp_path: Path
) -> None:
    before = batch_ids(jm)
    for body, named in BAD_BATCHES:
        text = json.dumps(body).replace("JOBS", str(jobs_dir))
        status, answer = curl(f"{jm.address}/batches", data=text)
        assert status == 400, (body, answer)
        assert named in answer["msg"], (body, answer)
    status, answer = curl(f"{jm.address}/batches", data='{"file": "/x.py",')
    assert status == 400 and "not JSON" in answer["msg"], answer
    assert batch_ids(jm) == before
    # No batch id was spent either: the next batch has the id that was next before.
    body, gate, _output = gated(jobs_dir, tmp_path, "after-bad")
    batch_id = submit(jm, body)["id"]
    assert batch_id == max(before, default=-1) + 1
    release(jm, (batch_id, gate))


def test_batches_without_credentials_are_401(jm: Proc, jobs_dir: Path) -> None:
    before = batch_ids(jm)
    body = json.dumps({"file": str(jobs_dir / "pi.py")})
    assert curl(f"{jm.address}/batches", auth=None, data=body)[0] == 401
    assert curl(f"{jm.address}/batches", auth=None)[0] == 401
    wrong = base64.b64encode(b"airflow:stw_not-a-token").decode()
    assert (
        curl(f"{jm.address}/batches/0", "-H", f"Authorization: Basic {wrong}", auth=None)[0] == 401
    )
    assert batch_ids(jm) == before


def test_a_batch_skips_an_id_whose_job_was_named_by_hand(
    cluster: ProcessCluster, jm: Proc, jobs_dir: Path, tmp_path: Path
) -> None:
    taken = next_batch_id(jm)
    _body, gate, _output = gated(jobs_dir, tmp_path, "by-hand")
    with cluster.client() as client:
        client.submit(
            jobs_dir / "gated.py", args=[str(gate), str(tmp_path / "x")], job_id=f"livy-{taken}"
        )
    body, livy_gate, _output = gated(jobs_dir, tmp_path, "by-livy")
    batch = submit(jm, body)
    assert batch["id"] == taken + 1 and batch["name"] == "by-livy", batch
    assert batch_ids(jm)[-2:] == [taken, taken + 1]
    release(jm, (taken, gate), (taken + 1, livy_gate))
