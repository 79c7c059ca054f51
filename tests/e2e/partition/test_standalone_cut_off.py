"""A TaskManager driving a Spark standalone application is unplugged: its executors must go.

The Spark Master and Worker live in a namespace of their own ("spark"), each TaskManager in
its own. Attempt 1 keeps an executor busy with one long task. Unplugging tm-1 (from ZooKeeper,
the leader and the Spark master at once) makes it fence itself and kill its runner, but the
dead driver's connection reset never reaches the master or the executor: without more, the
old application keeps its executor (and its running task) for Spark's timeouts, minutes,
while attempt 2's application registers beside it. The test watches the master's and the
worker's ``/json/`` from the private network and checks that the old application's executors
are gone before the replacement's application registers.
"""

from __future__ import annotations

import logging
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from e2e.partition.netns_cluster import NetnsCluster
from steward.testing.standalone import MasterState, StandaloneCluster
from steward.wire.jobs import FixedDelayRestart
from support import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

log = logging.getLogger(__name__)

JOB = "busy-standalone"
SPARK = "spark"
SPARK_DEADLINE = 420.0
"""Seconds for a Spark step: a loaded 2-core host took minutes to start one JVM."""

# Attempt 1: one JVM-only task that runs for many minutes on the executor (no Python worker
# needed there). Later attempts: a quick sum.
PIPELINE = textwrap.dedent(
    """
    def main(ctx):
        if ctx.attempt == 1:
            ctx.spark.range(0, 10**13, 1, 1).selectExpr("sum(id) AS s").first()
        total = ctx.spark.range(1000, numPartitions=1).selectExpr("sum(id) AS s").first()["s"]
        return {"sum": total, "attempt": ctx.attempt}
    """
)


@pytest.fixture
def namespaced_spark(partitioned: NetnsCluster, tmp_path: Path) -> Iterator[StandaloneCluster]:
    """A Master and one Worker (2 cores) in namespace ``spark``; killed after the test."""
    address = partitioned.network.add(SPARK)
    prefix = partitioned.network.exec_prefix(SPARK)
    spark = StandaloneCluster(tmp_path / "spark", cores=2, host=address, prefix=prefix)
    try:
        partitioned.call(lambda: spark.start(SPARK_DEADLINE))
        yield spark
    finally:
        spark.stop()


@dataclass
class Overlaps:
    """What the watcher saw: readings where attempt 2's application was registered while
    attempt 1's application was active or one of its executors still ran."""

    seen: list[str] = field(default_factory=list)
    readings: int = 0


def _running_executors(spark: StandaloneCluster, app_id: str) -> list[object]:
    worker = spark.worker_json() or {}
    return [e for e in worker.get("executors", []) if e.get("appid") == app_id]


def _watch(
    cluster: NetnsCluster, spark: StandaloneCluster, old_id: str, stop: threading.Event
) -> Overlaps:
    """Poll the master and the worker until ``stop``; record every overlap seen."""
    overlaps = Overlaps()

    def reading() -> None:
        state = spark.state()
        if state is None:
            return
        overlaps.readings += 1
        if not state.named(f"steward-{JOB}-2"):
            return
        if any(app.id == old_id for app in state.active):
            overlaps.seen.append(f"old app {old_id} active beside attempt 2's")
        if _running_executors(spark, old_id):
            overlaps.seen.append(f"old app {old_id}'s executor running beside attempt 2's app")

    while not stop.wait(0.1):
        cluster.call(reading)
    return overlaps


def _conf(spark: StandaloneCluster) -> dict[str, str]:
    """One core of the Worker's two: attempt 2 could start beside attempt 1 if allowed."""
    return {
        "spark.master": spark.master_url,
        "spark.master.ui.port": str(spark.webui_port),
        "spark.cores.max": "1",
        "spark.executor.memory": "512m",
        "spark.driver.memory": "512m",
    }


@pytest.mark.slow  # two JVM daemons, two drivers, a session timeout (minutes when loaded)
@pytest.mark.timeout(1500)  # one driver's JVM took 2.5 minutes to start on a loaded host
def test_unplugged_taskmanager_application_executors_are_gone_before_the_replacement_registers(
    partitioned: NetnsCluster, namespaced_spark: StandaloneCluster, tmp_path: Path
) -> None:
    cluster, spark = partitioned, namespaced_spark
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_taskmanager("tm-1", slots=1)
    cluster.wait_ready(taskmanagers=1)
    pipeline = tmp_path / "pipelines" / "busy.py"
    pipeline.parent.mkdir(parents=True)
    pipeline.write_text(PIPELINE)
    restart = FixedDelayRestart(attempts=3, delay=0.0)
    cluster.with_client(
        lambda c: c.submit(pipeline, job_id=JOB, spark_conf=_conf(spark), restart=restart)
    )
    old = cluster.call(lambda: spark.wait_app(f"steward-{JOB}-1", SPARK_DEADLINE, active=True))
    wait_until(
        lambda: cluster.call(lambda: _running_executors(spark, old.id)),
        SPARK_DEADLINE,
        interval=0.2,
        message="attempt 1's executor runs",
    )
    cluster.start_taskmanager("tm-2", slots=1)
    cluster.wait_ready(taskmanagers=2)

    # When: tm-1 is unplugged: ZooKeeper, the leader and the Spark master lose it at once.
    stop = threading.Event()
    result: list[Overlaps] = []
    watcher = threading.Thread(target=lambda: result.append(_watch(cluster, spark, old.id, stop)))
    watcher.start()
    cluster.network.cut("tm-1")
    try:
        new = cluster.call(lambda: spark.wait_app(f"steward-{JOB}-2", SPARK_DEADLINE))
        cluster.call(spark.state)  # one more reading with the successor's app registered
    finally:
        stop.set()
        watcher.join()
        cluster.network.heal("tm-1")
    [overlaps] = result

    # Then: at no reading was attempt 2's application registered while attempt 1's
    # application was active or its executor ran, and the master's own times agree.
    assert overlaps.readings > 0
    assert overlaps.seen == [], overlaps.seen[:3]
    state: MasterState | None = cluster.call(spark.state)
    assert state is not None
    [first] = state.named(f"steward-{JOB}-1")
    assert first.id not in {app.id for app in state.active}, f"{first.id} still active"
    log.info(
        "old app ended state=%s; successor registered %.2fs after it ended",
        first.state,
        (new.start_ms - first.end_ms) / 1000,
    )
    assert first.end_ms <= new.start_ms, (first, new)
    view = cluster.with_client(lambda c: c.job(JOB))
    assert view.attempts[-1].number == 2 and view.attempts[-1].taskmanager == "tm-2"
