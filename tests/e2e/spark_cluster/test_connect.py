"""Steward's jobs on a Spark Connect server (started from pyspark).

The work of a Connect session runs in the server: killing an attempt's processes leaves its
operations running there. Each attempt has its own session (:mod:`steward.runtime.connect`),
and the successor interrupts its predecessors' operations before it runs; the server's Spark UI
(``/api/v1/.../jobs``, each job tagged with its session) says when each job ran and how it
ended.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pipelines import EXPECTED_SUM, LONG, write

from steward.testing.connect_server import ConnectServer, job_time, jobs_of_session
from steward.testing.processes import ProcessCluster
from steward.wire.jobs import FixedDelayRestart
from support import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark, pytest.mark.slow]

log = logging.getLogger(__name__)
SPARK_DEADLINE = 240.0


def _session_of(folder: Path, attempt: int, timeout: float) -> str:
    path = folder / f"session-{attempt}"
    wait_until(path.exists, timeout, interval=0.2, message=f"attempt {attempt} connected")
    return path.read_text()


def _start(process_cluster: ProcessCluster, taskmanagers: int) -> dict[str, Any]:
    process_cluster.start_jobmanager("jm-1")
    started = {
        f"tm-{n}": process_cluster.start_taskmanager(f"tm-{n}", slots=1)
        for n in range(1, taskmanagers + 1)
    }
    process_cluster.wait_ready(taskmanagers=taskmanagers)
    return started


def test_sdk_pipeline_on_spark_connect_runs_in_its_own_session(
    process_cluster: ProcessCluster, spark_connect: ConnectServer, tmp_path: Path
) -> None:
    pipeline = write(tmp_path / "pipelines", "on_connect.py", LONG)
    _start(process_cluster, taskmanagers=1)
    with process_cluster.client() as client:
        conf = {"spark.master": spark_connect.url}
        client.submit(pipeline, job_id="connect-sum", args=[str(tmp_path), "-"], spark_conf=conf)
        result = client.wait("connect-sum", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    assert result.value == {"sum": EXPECTED_SUM, "attempt": 1}
    session = _session_of(tmp_path, 1, 1.0)
    # The server's UI records jobs from its listener bus, a little after they ran.
    jobs = wait_until(
        lambda: jobs_of_session(spark_connect.jobs(), session),
        30.0,
        interval=0.2,
        message=f"the server's jobs of session {session}",
    )
    assert all(job["status"] == "SUCCEEDED" for job in jobs), jobs


def test_killed_taskmanager_operations_are_interrupted_before_the_successor_runs(
    process_cluster: ProcessCluster, spark_connect: ConnectServer, tmp_path: Path
) -> None:
    pipeline = write(tmp_path / "pipelines", "long_on_connect.py", LONG)
    taskmanagers = _start(process_cluster, taskmanagers=2)
    with process_cluster.client(timeout=60) as client:
        conf = {"spark.master": spark_connect.url}
        args = [str(tmp_path), "slow-query"]
        restart = FixedDelayRestart(attempts=3, delay=0.0)
        client.submit(pipeline, job_id="slow", args=args, spark_conf=conf, restart=restart)
        first = _session_of(tmp_path, 1, SPARK_DEADLINE)
        wait_until(
            lambda: jobs_of_session(spark_connect.jobs("running"), first),
            SPARK_DEADLINE,
            interval=0.2,
            message="attempt 1's slow query running on the server",
        )
        victim = client.job("slow").attempts[-1].taskmanager
        signalled = time.time()
        taskmanagers[victim].signal(signal.SIGKILL)
        result = client.wait("slow", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    assert result.value == {"sum": EXPECTED_SUM, "attempt": 2}
    old, new = _jobs_by_attempt(spark_connect, first, _session_of(tmp_path, 2, 1.0))
    # Without fencing the old query would still be RUNNING (600 one-second rows, 2 at once).
    assert [job["status"] for job in old] == ["FAILED"] * len(old), old
    old_end = max(job_time(job["completionTime"]) for job in old)
    new_start = min(job_time(job["submissionTime"]) for job in new)
    log.info(
        "measured connect SIGKILL: old operation ended %.2fs after the signal, the successor's"
        " first job started %.2fs after that",
        old_end - signalled,
        new_start - old_end,
    )
    assert old_end <= new_start, (old, new)


def _jobs_by_attempt(
    server: ConnectServer, old_session: str, new_session: str
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    jobs = server.jobs()
    old, new = jobs_of_session(jobs, old_session), jobs_of_session(jobs, new_session)
    assert old and new, jobs
    return old, new
