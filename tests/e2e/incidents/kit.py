"""Small steps every incident test takes: start a cluster, submit a truthful job, wait."""

from __future__ import annotations

import contextlib

import httpx

from e2e.incidents.truth import PIPELINE, GroundTruth
from steward.client import Client
from steward.errors import StewardError
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.jobs import FixedDelayRestart
from steward.wire.rest import JobView
from steward.wire.states import JobState
from support import wait_until

RESTART = FixedDelayRestart(attempts=5, delay=0.2)
"""Quick restarts: a test that wants no restart checks the ground truth, not the budget."""


def start(cluster: ProcessCluster, jobmanagers: int, taskmanagers: int, tag: str = "") -> Proc:
    """Start the processes (ids ``jm-<tag>1``, ``tm-<tag>1``...); return the ready leader."""
    for n in range(1, jobmanagers + 1):
        cluster.start_jobmanager(f"jm-{tag}{n}")
    for n in range(1, taskmanagers + 1):
        cluster.start_taskmanager(f"tm-{tag}{n}")
    return cluster.wait_ready(taskmanagers=taskmanagers)


def submit(
    client: Client,
    truth: GroundTruth,
    job_id: str,
    *options: str,
    slots: int = 1,
) -> JobView:
    return client.submit(
        PIPELINE,
        args=[str(truth.path), *options],
        job_id=job_id,
        slots=slots,
        restart=RESTART,
    )


def job_state(client: Client, job_id: str) -> JobState | None:
    """The job's state, or None while no JobManager can answer."""
    with contextlib.suppress(StewardError, httpx.HTTPError):
        return client.job(job_id).state
    return None


def wait_running(client: Client, truth: GroundTruth, job_ids: list[str], timeout: float) -> None:
    """Every job RUNNING for Steward and started for the ground truth."""

    def all_running() -> bool:
        return all(
            job_state(client, job_id) is JobState.RUNNING and truth.starts(job_id)
            for job_id in job_ids
        )

    wait_until(all_running, timeout, interval=0.1, message=f"{job_ids} running")


def role(proc: Proc) -> str | None:
    """``leader`` or ``standby`` as the JobManager itself says (/healthz); None if silent."""
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
        return str(httpx.get(proc.address + "/healthz", timeout=2).json()["role"])
    return None


def wait_state(
    cluster: ProcessCluster, client: Client, job_id: str, state: JobState, timeout: float
) -> None:
    """Wait for the job's state; fail at once (with its log) if a Steward process died."""

    def reached() -> bool:
        cluster.check_alive()
        return job_state(client, job_id) is state

    wait_until(reached, timeout, interval=0.1, message=f"{job_id} {state}")
