"""Steward's jobs on Spark's own standalone Master and Worker (started from pyspark).

The runner is the Spark driver (client mode); the executors run on the Worker. When the
TaskManager driving an attempt dies or freezes, that attempt's application must be gone from
the master before the successor's registers: the master's ``/json/`` says when each started
and ended.
"""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path

import pytest
from pipelines import EXPECTED_SUM, LONG, SCRIPT, SUM, write

from steward.testing.processes import ProcessCluster
from steward.testing.standalone import MasterState, SparkApp, StandaloneCluster
from steward.wire.jobs import FixedDelayRestart
from support import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

log = logging.getLogger(__name__)
SPARK_DEADLINE = 240.0


def standalone_conf(cluster: StandaloneCluster) -> dict[str, str]:
    """Small: one executor core of the Worker's two, so a second application could start
    beside the first if Steward let one run (the test would see both active). The master's
    web UI is on a free port, not Spark's 8080: a successor attempt kills its predecessors'
    applications through it (``spark.master.ui.port``, as a job on such a master says)."""
    return {
        "spark.master": cluster.master_url,
        "spark.master.ui.port": str(cluster.webui_port),
        "spark.cores.max": "1",
        "spark.executor.memory": "512m",
        "spark.driver.memory": "512m",
        "spark.driver.host": "127.0.0.1",
    }


def test_sdk_pipeline_runs_its_executors_on_the_standalone_worker(
    process_cluster: ProcessCluster, spark_standalone: StandaloneCluster, tmp_path: Path
) -> None:
    pipeline = write(tmp_path / "pipelines", "sum_on_standalone.py", SUM)
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    with process_cluster.client() as client:
        client.submit(
            pipeline, job_id="standalone-sum", spark_conf=standalone_conf(spark_standalone)
        )
        result = client.wait("standalone-sum", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    assert result.value == {"sum": EXPECTED_SUM, "attempt": 1}

    def completed() -> SparkApp | None:
        state = spark_standalone.state()
        apps = [] if state is None else state.completed
        return next((a for a in apps if a.name == "steward-standalone-sum-1"), None)

    app = wait_until(completed, 30.0, interval=0.2, message="the job's app completed")
    assert spark_standalone.executors_of(app.id), spark_standalone.worker_json()
    process_cluster.check_alive()


@pytest.mark.slow
def test_unmodified_spark_submit_script_runs_on_the_standalone_master(
    process_cluster: ProcessCluster, spark_standalone: StandaloneCluster, tmp_path: Path
) -> None:
    script = write(tmp_path / "pipelines", "plain_script.py", SCRIPT)
    output = tmp_path / "script-output.txt"
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    with process_cluster.client() as client:
        conf = standalone_conf(spark_standalone)
        client.submit(script, job_id="plain-script", args=[str(output)], spark_conf=conf)
        result = client.wait("plain-script", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    total, app_id, master = output.read_text().split()
    assert (int(total), master) == (EXPECTED_SUM, spark_standalone.master_url)

    def completed() -> SparkApp | None:
        state = spark_standalone.state()
        return next((a for a in state.completed if a.id == app_id), None) if state else None

    app = wait_until(completed, 30.0, interval=0.2, message="the script's app completed")
    assert app.name == "unmodified-script"
    assert spark_standalone.executors_of(app.id), spark_standalone.worker_json()


def _kill_during_long_attempt(
    process_cluster: ProcessCluster,
    spark_standalone: StandaloneCluster,
    tmp_path: Path,
    signum: signal.Signals,
) -> tuple[SparkApp, SparkApp, float]:
    """Attempt 1 busy on the cluster; ``signum`` to its TaskManager; the job finishes on the
    other. Returns the apps of attempts 1 and 2 and when the signal was sent (epoch s)."""
    job = f"long-{signum.name.lower()}"
    pipeline = write(tmp_path / "pipelines", "long_on_standalone.py", LONG)
    process_cluster.start_jobmanager("jm-1")
    taskmanagers = {tm: process_cluster.start_taskmanager(tm, slots=1) for tm in ("tm-1", "tm-2")}
    process_cluster.wait_ready(taskmanagers=2)
    with process_cluster.client(timeout=60) as client:
        restart = FixedDelayRestart(attempts=3, delay=0.0)
        conf = standalone_conf(spark_standalone)
        args = [str(tmp_path), "loop"]
        client.submit(pipeline, job_id=job, args=args, spark_conf=conf, restart=restart)
        first = spark_standalone.wait_app(f"steward-{job}-1", SPARK_DEADLINE, active=True)
        wait_until(lambda: spark_standalone.executors_of(first.id), 120.0, interval=0.2)
        victim = client.job(job).attempts[-1].taskmanager
        signalled = time.time()
        taskmanagers[victim].signal(signum)
        overlaps = []

        def finished() -> bool:
            state = spark_standalone.state()
            if state is not None:
                names = {app.name for app in state.active}
                overlaps.extend(
                    [names] if {f"steward-{job}-1", f"steward-{job}-2"} <= names else []
                )
            return client.job(job).state.value == "FINISHED"

        wait_until(finished, SPARK_DEADLINE, interval=0.1, message="job finished")
        result = client.wait(job, timeout=10)
    assert result.value == {"sum": EXPECTED_SUM, "attempt": 2}
    assert overlaps == [], "both attempts' applications were active at once"
    taskmanagers[victim].signal(signal.SIGKILL)
    state = wait_until(
        lambda: _idle(spark_standalone), 60.0, interval=0.2, message="no app holds cores"
    )
    [old], [new] = state.named(f"steward-{job}-1"), state.named(f"steward-{job}-2")
    return old, new, signalled


def _idle(cluster: StandaloneCluster) -> MasterState | None:
    state = cluster.state()
    return state if state is not None and not state.active and state.cores_used == 0 else None


@pytest.mark.slow
def test_killed_taskmanager_application_leaves_the_master_before_the_successor_registers(
    process_cluster: ProcessCluster, spark_standalone: StandaloneCluster, tmp_path: Path
) -> None:
    old, new, signalled = _kill_during_long_attempt(
        process_cluster, spark_standalone, tmp_path, signal.SIGKILL
    )
    log.info(
        "measured standalone SIGKILL: old app left %.2fs after the signal, successor's"
        " registered %.2fs after it left",
        old.end_ms / 1000 - signalled,
        (new.start_ms - old.end_ms) / 1000,
    )
    assert old.end_ms <= new.start_ms, (old, new)


@pytest.mark.slow
def test_frozen_taskmanager_application_leaves_the_master_before_the_successor_registers(
    process_cluster: ProcessCluster, spark_standalone: StandaloneCluster, tmp_path: Path
) -> None:
    old, new, signalled = _kill_during_long_attempt(
        process_cluster, spark_standalone, tmp_path, signal.SIGSTOP
    )
    log.info(
        "measured standalone SIGSTOP: old app left %.2fs after the signal, successor's"
        " registered %.2fs after it left",
        old.end_ms / 1000 - signalled,
        (new.start_ms - old.end_ms) / 1000,
    )
    assert old.end_ms <= new.start_ms, (old, new)
