"""A warm spare runner with real PySpark, driven like a TaskManager drives it.

Given a spare (``RunnerProcess.spare``) that reported ``ready``, when it is assigned an
attempt, then the pipeline runs in the spare's process, in the attempt's folder, with the
warm session carrying the job's SQL conf; and the static SQL conf list that decides which
jobs may use a spare (:mod:`steward.wire.warm`) covers every static key the JVM knows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_harness import launch_document

from steward.supervisor.runner_process import RunnerProcess
from steward.wire.runner_protocol import FinishedEvent, RunnerEvent, StartedEvent
from steward.wire.warm import STATIC_SQL_CONFS

pytestmark = pytest.mark.spark

WARM_DEADLINE = 240.0

PROBE = """
import os

def main(ctx):
    spark = ctx.spark
    conf = spark._jvm.org.apache.spark.sql.internal.__getattr__("SQLConf$")
    module = conf.__getattr__("MODULE$")
    field = module.getClass().getDeclaredField("staticConfKeys")
    field.setAccessible(True)
    return {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "count": spark.range(7).count(),
        "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "static": sorted(field.get(module)),
    }
"""


def test_a_spare_runs_its_attempt_on_the_warm_session(tmp_path: Path) -> None:
    pipeline = tmp_path / "probe.py"
    pipeline.write_text(PROBE)
    spare = RunnerProcess.spare(
        spark_master="local[1]",
        deadman_timeout=30.0,
        cwd=tmp_path / "spare",
        log_path=tmp_path / "spare" / "runner.log",
    )
    spare.spawn()
    try:
        assert spare.wait_ready(WARM_DEADLINE), (tmp_path / "spare" / "runner.log").read_text()
        ready = spare.ready
        assert ready is not None and ready.pid == spare.pid

        launch = launch_document(pipeline, tmp_path / "ck")
        launch = launch.model_copy(
            update={
                "spark_master": "local[1]",
                "spec": launch.spec.model_copy(
                    update={"spark_conf": {"spark.sql.shuffle.partitions": "3"}}
                ),
            }
        )
        attempt_dir = tmp_path / "job-1" / "1"
        attempt_dir.mkdir(parents=True)
        events: list[RunnerEvent] = []
        spare.assign(launch, log_path=attempt_dir / "runner.log", on_event=events.append)
        spare.begin()

        assert spare.wait_events_closed(WARM_DEADLINE)
        outcome = spare.outcome()
        assert isinstance(outcome, FinishedEvent), (attempt_dir / "runner.log").read_text()
        assert isinstance(events[0], StartedEvent) and events[0].pid == spare.pid
        value = outcome.value
        assert isinstance(value, dict)
        assert value["pid"] == spare.pid
        assert value["cwd"] == str(attempt_dir)
        assert value["count"] == 7
        assert value["partitions"] == "3"
        missing = set(value["static"]) - STATIC_SQL_CONFS  # type: ignore[arg-type]
        assert not missing, f"static SQL confs unknown to steward.wire.warm: {missing}"
        log = (attempt_dir / "runner.log").read_text()
        assert "spare ready" in log and "warm SparkSession adopted" in log
        assert spare.wait_gone(60.0), "the spare and its JVM are gone after the attempt"
    finally:
        spare.kill()
        spare.wait_gone(30.0)
        spare.close()
