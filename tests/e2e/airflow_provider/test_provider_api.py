"""The provider's HTTP side against a real Steward cluster, without Airflow (fast, in
Steward's venv): what a retried task finds under its job id, files sent once, and following
a job over ``/v1/events`` through its leader's SIGKILL.
"""

from __future__ import annotations

import asyncio
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest

from steward.testing.credentials import kit_admin_token
from steward.testing.processes import ProcessCluster
from steward_airflow.api import Endpoint, JobConflictError, StewardApi
from steward_airflow.events import follow
from steward_airflow.submission import build
from support import wait_until

pytestmark = pytest.mark.zookeeper

DEADLINE = 120.0
GATED = """
import os
import sys
import time

while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
print("done", flush=True)
"""


def api_of(cluster: ProcessCluster) -> StewardApi:
    addresses = tuple(jm.address for jm in cluster.jobmanagers())
    return StewardApi(Endpoint(addresses, token=kit_admin_token(), timeout=DEADLINE))


def run(cluster: ProcessCluster, call: Any) -> Any:
    async def go() -> Any:
        async with api_of(cluster) as api:
            return await call(api)

    return asyncio.run(go())


@pytest.fixture
def gated(tmp_path: Path) -> Path:
    script = tmp_path / "gated.py"
    script.write_text(textwrap.dedent(GATED))
    return script


def test_a_repeated_submission_attaches_and_a_changed_one_is_refused_before_and_after_the_end(
    process_cluster: ProcessCluster, gated: Path, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    lib = tmp_path / "lib.py"
    lib.write_text("X = 1\n")
    gate = tmp_path / "gate"
    first = build(job_id="retried", application=gated, application_args=[gate], py_files=[lib])
    view, how = run(process_cluster, lambda api: api.submit(first))
    assert (view["job_id"], how) == ("retried", "submitted")
    again = build(job_id="retried", application=gated, application_args=[gate], py_files=[lib])
    view, how = run(process_cluster, lambda api: api.submit(again))
    assert (view["job_id"], how) == ("retried", "attached")
    assert run(process_cluster, lambda api: api.upload(again.files[0])) is False
    changed = build(job_id="retried", application=gated, application_args=[gate, "x"])
    with pytest.raises(JobConflictError, match="submitted with another spec"):
        run(process_cluster, lambda api: api.submit(changed))
    gate.touch()
    final = run(process_cluster, lambda api: follow(api, "retried", poll=0.5))
    assert final["state"] == "FINISHED" and final["attempt_count"] == 1
    view, how = run(process_cluster, lambda api: api.submit(again))
    assert (view["state"], how) == ("FINISHED", "finished")
    # Ended, the job still tells its own submission from a changed one (its result keeps the
    # digest): the changed spec fails the task instead of taking the old result.
    with pytest.raises(JobConflictError, match="submitted with another spec"):
        run(process_cluster, lambda api: api.submit(changed))
    with process_cluster.client() as client:
        assert [job.job_id for job in client.jobs()] == ["retried"]


def test_following_a_job_outlives_its_leaders_sigkill(
    process_cluster: ProcessCluster, gated: Path, tmp_path: Path
) -> None:
    leader = process_cluster.start_jobmanager("jm-1")
    process_cluster.wait_ready(taskmanagers=0)
    process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    gate = tmp_path / "gate"
    submission = build(job_id="followed", application=gated, application_args=[gate])
    states: list[str] = []

    async def scenario(api: StewardApi) -> dict[str, Any]:
        await api.submit(submission)
        follower = asyncio.create_task(
            follow(api, "followed", poll=0.5, on_change=lambda v: states.append(v["state"]))
        )
        await asyncio.to_thread(wait_until, lambda: "RUNNING" in states, DEADLINE, "job running")
        leader.signal(signal.SIGKILL)
        gate.touch()
        return await asyncio.wait_for(follower, DEADLINE)

    final = run(process_cluster, scenario)
    assert final["state"] == "FINISHED", final
    assert final["attempt_count"] == 1
