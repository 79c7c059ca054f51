"""End to end: a job's ``timeout`` and ``env`` (issue 24), with real processes and ZooKeeper.

A timed-out job is cancelled by the leader (its runner really gone) and its result says
TIMEOUT; the deadline is derived from what is stored, so a new leader enforces it after the
old one is SIGKILLed. A job's environment variables reach its driver's process, and every
view (REST on the leader and on a standby, the CLI, the processes' logs) shows a secret one
redacted.

The timeout and env tests share one cluster (a leader, a standby, a TaskManager): each waits
for its own jobs to end. The leader-SIGKILL test has a cluster of its own:
test_job_timeout_takeover.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.bad_input.conftest import run_cli
from e2e.module_clusters import module_cluster
from e2e.ticking import read_truth, write_pipeline
from steward.taskmanager.preparation import attempt_log
from steward.testing.credentials import auth_headers
from steward.testing.processes import ProcessCluster
from steward.wire.job_options import TIMEOUT_ERROR_TYPE
from steward.wire.redaction import REPLACEMENT
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import pid_alive, wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    with module_cluster(tmp_path_factory, zookeeper, "job-options", jobmanagers=2) as cluster:
        yield cluster


def test_a_job_past_its_timeout_is_cancelled_with_reason_timeout(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    truth = tmp_path / "truth.log"
    with cluster.client() as client:
        # 8 s: the attempt must start (and write its truth) before the deadline, and a runner
        # took over 4 s to start once at a load of 12.
        job = client.submit(
            write_pipeline(tmp_path), args=[str(truth), "100000", "0.2"], timeout="8s"
        )
        assert job.timeout == 8.0
        assert job.deadline == pytest.approx((job.submitted_at or 0) + 8.0)
        wait_until(lambda: read_truth(truth), 30, message="attempt started")
        pid = read_truth(truth)[0][2]
        result = client.wait(job.job_id, timeout=60)
        view = client.job(job.job_id)
    assert result.state.value == "CANCELED"
    assert result.error is not None and result.error.type == TIMEOUT_ERROR_TYPE
    assert result.error.message.startswith("TIMEOUT")
    assert view.state is JobState.CANCELED and (view.reason or "").startswith("TIMEOUT")
    assert result.finished_at >= (result.submitted_at or 0) + 8.0
    wait_until(lambda: not pid_alive(pid), 15, message="runner gone after the timeout")


ENV_PIPELINE = """
import hashlib, os

def initialize(ctx):
    if os.environ.get("GREETING") != "hello-from-env":
        raise RuntimeError("the initialize hook did not get the job's env")

def main(ctx):
    print("GREETING=" + os.environ["GREETING"], flush=True)
    secret = os.environ["DB_PASSWORD"]
    if ctx.args and ctx.args[0] == "fail":
        raise RuntimeError("cannot log in with " + secret)
    return {
        "greeting": os.environ["GREETING"],
        "password_sha256": hashlib.sha256(secret.encode()).hexdigest(),
    }
"""

SECRET = "pw-env-5c1d9e"


def test_env_reaches_the_driver_and_is_shown_redacted(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    pipeline = tmp_path / "env_pipeline.py"
    pipeline.write_text(ENV_PIPELINE)
    env = {"GREETING": "hello-from-env", "DB_PASSWORD": SECRET}
    with cluster.client() as client:
        client.submit(pipeline, job_id="env-ok", env=env)
        client.submit(
            pipeline, job_id="env-fails", args=["fail"], env=env, restart={"kind": "none"}
        )
        ok = client.wait("env-ok", timeout=60)
        failed = client.wait("env-fails", timeout=60)
    # The initialize hook and the driver's process had both values.
    assert ok.state.value == "FINISHED", ok
    assert ok.value["greeting"] == "hello-from-env"
    assert ok.value["password_sha256"] == hashlib.sha256(SECRET.encode()).hexdigest()
    # Each attempt's log by its path: a walk of the whole work folder met an attempt's
    # temporary folder being removed as it ended (FileNotFoundError from rglob).
    with cluster.client() as client:
        attempts = [(job_id, client.job(job_id).attempts) for job_id in ("env-ok", "env-fails")]
    runner_logs = [
        attempt_log(cluster.workdir / "work", attempt.taskmanager, job_id, attempt.number)
        for job_id, ran in attempts
        for attempt in ran
    ]
    assert any("GREETING=hello-from-env" in log.read_text() for log in runner_logs)
    # Its error quoted the secret: the runner hid it.
    assert failed.state.value == "FAILED" and failed.error is not None
    assert "cannot log in with" in failed.error.message and REPLACEMENT in failed.error.message
    shown = {"GREETING": "hello-from-env", "DB_PASSWORD": REPLACEMENT}
    for proc in cluster.jobmanagers():  # the leader and the standby
        view = httpx.get(
            f"{proc.address}/v1/jobs/env-ok", headers=auth_headers(), timeout=30
        ).json()
        assert view["env"] == shown, (proc.id, view)
        for path in ("/v1/jobs/env-ok", "/v1/jobs/env-fails/result", "/v1/jobs"):
            text = httpx.get(proc.address + path, headers=auth_headers(), timeout=30).text
            assert SECRET not in text, (proc.id, path)
    status = run_cli(cluster, "status", "env-ok")
    assert status.returncode == 0, status
    assert (
        f"DB_PASSWORD={REPLACEMENT}" in status.stdout and "GREETING=hello-from-env" in status.stdout
    )
    as_json = run_cli(cluster, "status", "env-ok", "--json")
    assert SECRET not in status.stdout + status.stderr + as_json.stdout + as_json.stderr
    assert f'"DB_PASSWORD": "{REPLACEMENT}"' in as_json.stdout
    logs = [*(cluster.workdir / "logs").glob("*.log"), *runner_logs]
    for log in logs:
        assert SECRET not in log.read_text(errors="replace"), log
