"""Livy's batch API through a real cluster, driven by curl exactly as Livy's REST docs do.

``POST /batches`` with ``{"file": ...}``, then ``GET /batches/{id}`` (and ``/state``,
``/log``) until a terminal state; a listing paged by ``from``/``size``; ``DELETE``; bad input
answered 400 naming the field with nothing created; no credentials answered 401; a batch
submitted through a standby that outlives its leader's SIGKILL and completes once.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from support import wait_until

pytestmark = pytest.mark.zookeeper

SPARK_DEADLINE = 240.0
QUICK_DEADLINE = 60.0
TERMINAL = {"success", "dead", "killed"}

PI_SCRIPT = """
import sys
from random import random
from operator import add

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    n = 10000 * partitions

    def f(_):
        x = random() * 2 - 1
        y = random() * 2 - 1
        return 1 if x ** 2 + y ** 2 <= 1 else 0

    count = spark.sparkContext.parallelize(range(1, n + 1), partitions).map(f).reduce(add)
    print("Pi is roughly %f" % (4.0 * count / n))
    spark.stop()
"""

# Runs until the gate file appears (no Spark: no JVM), then appends one line to its output.
GATED_SCRIPT = """
import os
import sys
import time

gate, output = sys.argv[1], sys.argv[2]
print("greeting", os.environ.get("GREETING"), flush=True)
print("waiting for", gate, flush=True)
while not os.path.exists(gate):
    time.sleep(0.1)
with open(output, "a") as out:
    out.write(f"ran {os.getpid()}\\n")
print("done", flush=True)
"""


@pytest.fixture
def jobs_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "pi.py").write_text(textwrap.dedent(PI_SCRIPT))
    (folder / "gated.py").write_text(textwrap.dedent(GATED_SCRIPT))
    return folder


@pytest.fixture
def cluster(
    tmp_path: Path, zk_quorum: str, cluster_id: str, jobs_dir: Path
) -> Iterator[ProcessCluster]:
    extra = {"jobmanager.livy.allowed-sources": str(jobs_dir)}
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id, extra=extra)
    try:
        yield cluster
    finally:
        cluster.stop()


def curl(
    url: str, *args: str, auth: str | None = "bearer", data: str | None = None
) -> tuple[int, Any]:
    """curl's status and JSON body; ``auth``: bearer, basic (the token as the password) or
    None."""
    argv = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args]
    if auth == "bearer":
        argv += ["-H", f"Authorization: Bearer {kit_admin_token()}"]
    elif auth == "basic":
        argv += ["-u", f"airflow:{kit_admin_token()}"]
    if data is not None:
        argv += ["-X", "POST", "--data", data, "-H", "Content-Type: application/json"]
    done = subprocess.run([*argv, url], capture_output=True, text=True, timeout=60, check=True)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body) if body else None


def submit(jm: Proc, body: dict[str, Any]) -> dict[str, Any]:
    status, batch = curl(f"{jm.address}/batches", data=json.dumps(body))
    assert status == 201, batch
    return dict(batch)


def state_of(jm: Proc, batch_id: int) -> str:
    status, answer = curl(f"{jm.address}/batches/{batch_id}/state")
    assert status == 200, answer
    assert answer["id"] == batch_id
    return str(answer["state"])


def gated(jobs_dir: Path, tmp_path: Path, name: str) -> tuple[dict[str, Any], Path, Path]:
    gate, output = tmp_path / f"{name}.gate", tmp_path / f"{name}.out"
    body = {"file": str(jobs_dir / "gated.py"), "args": [str(gate), str(output)], "name": name}
    return body, gate, output


@pytest.mark.spark
def test_curl_submits_a_pyspark_file_that_runs_to_success(
    cluster: ProcessCluster, jobs_dir: Path
) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    body = {
        "file": f"file://{jobs_dir / 'pi.py'}",
        "args": ["2"],
        "name": "pi",
        "driverMemory": "700m",
        "conf": {"spark.master": "local[2]", "spark.ui.enabled": False},
    }
    batch = submit(jm, body)
    assert batch["id"] == 0
    assert batch["name"] == "pi"
    assert batch["owner"] and batch["proxyUser"] is None
    assert batch["state"] in {"not_started", "starting", "running"}
    assert set(batch) >= {"id", "name", "owner", "proxyUser", "state", "appId", "appInfo", "log"}
    wait_until(lambda: state_of(jm, 0) in TERMINAL, SPARK_DEADLINE, message="batch ended")
    status, final = curl(f"{jm.address}/batches/0")
    assert status == 200
    assert final["state"] == "success", final
    assert final["appId"], final
    assert final["appInfo"]["driverLogUrl"].endswith("/v1/jobs/livy-0/attempts/1/log")
    assert 0 < len(final["log"]) <= 10
    status, logged = curl(f"{jm.address}/batches/0/log?size=1000")
    assert status == 200
    assert logged["id"] == 0 and logged["total"] == len(logged["log"]) + logged["from"]
    assert any(line.startswith("Pi is roughly 3.") for line in logged["log"]), logged
    with cluster.client() as client:
        assert client.result("livy-0").state.value == "FINISHED"


def test_batches_list_by_offset_and_answer_state_and_log(
    cluster: ProcessCluster, jobs_dir: Path, tmp_path: Path
) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1", slots=3)
    cluster.wait_ready(taskmanagers=1)
    ids, gates = [], []
    for name in ("first", "second", "third"):
        body, gate, _output = gated(jobs_dir, tmp_path, name)
        body["conf"] = {
            "spark.executorEnv.GREETING": "hi",
            "spark.yarn.appMasterEnv.GREETING": name,
        }
        ids.append(submit(jm, body)["id"])
        gates.append(gate)
    assert ids == [0, 1, 2]
    status, page = curl(f"{jm.address}/batches?from=1&size=1")
    assert status == 200
    assert page["from"] == 1 and page["total"] == 3
    assert [(s["id"], s["name"]) for s in page["sessions"]] == [(1, "second")]
    status, everything = curl(f"{jm.address}/batches", auth="basic")
    assert status == 200, everything
    assert [s["id"] for s in everything["sessions"]] == [0, 1, 2]
    wait_until(lambda: state_of(jm, 0) == "running", QUICK_DEADLINE, message="batch 0 running")
    gates[0].touch()
    wait_until(lambda: state_of(jm, 0) == "success", QUICK_DEADLINE, message="batch 0 done")
    status, logged = curl(f"{jm.address}/batches/0/log?from=0&size=100")
    assert status == 200 and logged["from"] == 0
    assert any("waiting for" in line for line in logged["log"]), logged
    assert any(line == "done" for line in logged["log"]), logged
    assert "greeting first" in logged["log"], logged  # the driver's own setting wins
    paged = [curl(f"{jm.address}/batches/0/log?from={n}&size=1")[1] for n in range(logged["total"])]
    assert [line for page in paged for line in page["log"]] == logged["log"]
    assert {page["total"] for page in paged} == {logged["total"]}
    status, tail = curl(f"{jm.address}/batches/0/log?size=1")
    assert tail["total"] == logged["total"] and tail["from"] == logged["total"] - 1
    assert len(tail["log"]) == 1
    status, missing = curl(f"{jm.address}/batches/99")
    assert status == 404 and missing["msg"] == "Session '99' not found."


def test_delete_kills_a_running_batch(
    cluster: ProcessCluster, jobs_dir: Path, tmp_path: Path
) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    body, _gate, output = gated(jobs_dir, tmp_path, "doomed")
    batch_id = submit(jm, body)["id"]
    wait_until(lambda: state_of(jm, batch_id) == "running", QUICK_DEADLINE)
    status, answer = curl(f"{jm.address}/batches/{batch_id}", "-X", "DELETE")
    assert (status, answer) == (200, {"msg": "deleted"})
    wait_until(lambda: state_of(jm, batch_id) == "killed", QUICK_DEADLINE, message="killed")
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
    cluster: ProcessCluster, jobs_dir: Path
) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    for body, named in BAD_BATCHES:
        text = json.dumps(body).replace("JOBS", str(jobs_dir))
        status, answer = curl(f"{jm.address}/batches", data=text)
        assert status == 400, (body, answer)
        assert named in answer["msg"], (body, answer)
    status, answer = curl(f"{jm.address}/batches", data='{"file": "/x.py",')
    assert status == 400 and "not JSON" in answer["msg"], answer
    status, listing = curl(f"{jm.address}/batches")
    assert (status, listing["total"], listing["sessions"]) == (200, 0, [])
    # No batch id was spent either: the next batch is 0.
    assert submit(jm, {"file": str(jobs_dir / "pi.py")})["id"] == 0


def test_batches_without_credentials_are_401(cluster: ProcessCluster, jobs_dir: Path) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    body = json.dumps({"file": str(jobs_dir / "pi.py")})
    assert curl(f"{jm.address}/batches", auth=None, data=body)[0] == 401
    assert curl(f"{jm.address}/batches", auth=None)[0] == 401
    wrong = base64.b64encode(b"airflow:stw_not-a-token").decode()
    assert (
        curl(f"{jm.address}/batches/0", "-H", f"Authorization: Basic {wrong}", auth=None)[0] == 401
    )
    status, listing = curl(f"{jm.address}/batches")
    assert (status, listing["total"]) == (200, 0)


def test_a_batch_outlives_its_leaders_sigkill_and_completes_once(
    cluster: ProcessCluster, jobs_dir: Path, tmp_path: Path
) -> None:
    first = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    standby = cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1")
    leader = cluster.wait_ready(taskmanagers=1)
    assert leader.id == first.id
    cluster.wait_all_ready(30)
    body, gate, output = gated(jobs_dir, tmp_path, "survivor")
    batch = submit(standby, body)  # forwarded to the leader
    batch_id = batch["id"]
    status, listing = curl(f"{standby.address}/batches")  # listed there at once
    assert status == 200 and [s["id"] for s in listing["sessions"]] == [batch_id], listing
    wait_until(lambda: state_of(standby, batch_id) == "running", QUICK_DEADLINE)
    leader.signal(signal.SIGKILL)
    new_leader = cluster.wait_ready(taskmanagers=1, timeout=QUICK_DEADLINE)
    assert new_leader.id == standby.id
    status, view = curl(f"{standby.address}/batches/{batch_id}")
    assert status == 200 and view["id"] == batch_id and view["name"] == "survivor", view
    assert view["state"] == "running", view
    gate.touch()
    wait_until(lambda: state_of(standby, batch_id) == "success", QUICK_DEADLINE)
    assert len(output.read_text().splitlines()) == 1, output.read_text()
    with cluster.client() as client:
        assert client.job(f"livy-{batch_id}").attempt_count == 1
    # The counter moved on in ZooKeeper: the new leader's next batch is a new id.
    assert submit(standby, gated(jobs_dir, tmp_path, "next")[0])["id"] == batch_id + 1


def test_a_batch_skips_an_id_whose_job_was_named_by_hand(
    cluster: ProcessCluster, jobs_dir: Path, tmp_path: Path
) -> None:
    jm = cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    _body, gate, _output = gated(jobs_dir, tmp_path, "by-hand")
    with cluster.client() as client:
        client.submit(jobs_dir / "gated.py", args=[str(gate), str(tmp_path / "x")], job_id="livy-0")
    batch = submit(jm, gated(jobs_dir, tmp_path, "by-livy")[0])
    assert batch["id"] == 1 and batch["name"] == "by-livy", batch
    status, listing = curl(f"{jm.address}/batches")
    assert status == 200 and [s["id"] for s in listing["sessions"]] == [0, 1], listing
