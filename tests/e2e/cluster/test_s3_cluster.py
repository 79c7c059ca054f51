"""A real cluster whose HA storage is ``s3://`` on a real S3-compatible server (moto's): jobs
run with their graphs and files there; while the store does not answer, a submission is refused
with a clear error and the cluster stays up; once it answers again, jobs run again."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from steward.errors import JobNotFoundError
from steward.testing.processes import ProcessCluster
from steward.testing.s3 import S3Server
from steward.wire.states import TerminalState
from steward.zookeeper.managed import ManagedEnsemble
from support import require_modules

require_modules(
    s3fs="s3:// needs s3fs (pip install steward[s3])",
    moto="the S3 server of these tests is moto's (the dev extra)",
)

pytestmark = pytest.mark.zookeeper

FROZEN_B64 = base64.b64encode(b"def main(ctx):\n    return 1\n").decode()
PIPELINE = """
from helper import answer

def main(ctx):
    return {"answer": answer()}
"""


def test_a_cluster_on_s3_runs_jobs_and_survives_the_store_going_away(
    tmp_path: Path, zookeeper: ManagedEnsemble, s3: S3Server
) -> None:
    cluster = ProcessCluster(
        tmp_path,
        zookeeper.connect_string,
        f"t-s3-{tmp_path.name[-6:]}",
        extra={"high-availability.storage-dir": s3.url("cluster")},
    )
    pipeline = tmp_path / "on_s3.py"
    pipeline.write_text(PIPELINE)
    helper = tmp_path / "helper.py"
    helper.write_text("def answer():\n    return 42\n")
    try:
        cluster.start_jobmanager("jm-1")
        cluster.start_taskmanager("tm-1", slots=1)
        cluster.wait_ready(taskmanagers=1)
        with cluster.client(timeout=60) as client:
            # A job whose graph and --py-files live in the bucket runs to its result
            client.submit(pipeline, job_id="s3-first", py_files=[helper])
            assert client.wait("s3-first", timeout=90).state is TerminalState.FINISHED
            assert client.result("s3-first").value == {"answer": 42}
            # While the store does not answer, a submission is refused, saying why
            leader = cluster.leader()
            assert leader is not None
            s3.freeze()
            try:
                answer = httpx.post(
                    leader.address + "/v1/jobs",
                    json={
                        "spec": {"job_id": "s3-frozen"},
                        "artifact": {"filename": "p.py", "data_b64": FROZEN_B64},
                    },
                    headers=cluster.headers,
                    verify=cluster.tls.context,
                    timeout=90,
                )
                assert answer.status_code == 507, answer.text
                assert answer.json()["code"] == "storage_unavailable"
                assert "no answer within" in answer.json()["message"]
                cluster.check_alive()
            finally:
                s3.thaw()
            # Once it answers again, so does the cluster
            client.submit(pipeline, job_id="s3-again", py_files=[helper])
            assert client.wait("s3-again", timeout=90).state is TerminalState.FINISHED
            with pytest.raises(JobNotFoundError):  # the refused submission stored nothing
                client.job("s3-frozen")
    finally:
        cluster.stop()
