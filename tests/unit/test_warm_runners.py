"""Which jobs may use a warm spare, the spare's wire additions, and its launch-line reader."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from steward.runtime.deadman import DeadmanSwitch, LaunchLineCollector
from steward.wire.jobs import DependencyKind, JobSpec
from steward.wire.runner_protocol import (
    EXIT_USAGE,
    RUNNER_MODULE,
    LaunchDocument,
    LaunchError,
    LocalDependency,
    ReadyEvent,
    decode_event,
    encode_event,
    runner_command,
    spare_command,
)
from steward.wire.warm import cold_reason, files_cold_reason, is_runtime_sql_conf, runtime_conf

MASTER = "local[*]"


@pytest.mark.parametrize(
    "conf",
    [
        {},
        {"spark.sql.shuffle.partitions": "3"},
        {"spark.sql.session.timeZone": "UTC", "spark.sql.adaptive.enabled": "false"},
        {"spark.master": MASTER, "spark.app.name": "mine"},
        {"spark.ui.showConsoleProgress": "false"},
    ],
)
def test_a_job_with_only_runtime_sql_conf_may_use_a_spare(conf: dict[str, str]) -> None:
    assert cold_reason(conf, MASTER, MASTER) is None


@pytest.mark.parametrize(
    ("conf", "reason"),
    [
        ({"spark.driver.memory": "2g"}, "spark.driver.memory cannot be changed"),
        ({"spark.executor.cores": "2"}, "spark.executor.cores cannot be changed"),
        ({"spark.jars.packages": "a:b:1"}, "spark.jars.packages cannot be changed"),
        ({"spark.hadoop.fs.s3a.endpoint": "x"}, "spark.hadoop.fs.s3a.endpoint cannot"),
        ({"spark.sql.warehouse.dir": "/w"}, "spark.sql.warehouse.dir cannot"),
        ({"spark.sql.extensions": "x.Ext"}, "spark.sql.extensions cannot"),
        ({"spark.sql.hive.metastore.version": "2.3"}, "spark.sql.hive.metastore.version"),
        ({"spark.sql.catalogImplementation": "hive"}, "catalogImplementation cannot"),
        ({"spark.ui.showConsoleProgress": "true"}, "differs from the spares' default"),
        ({"spark.master": "local[2]"}, "cannot be changed"),
    ],
)
def test_a_job_with_start_up_conf_needs_a_cold_runner(conf: dict[str, str], reason: str) -> None:
    found = cold_reason({"spark.sql.shuffle.partitions": "2", **conf}, MASTER, MASTER)
    assert found is not None and reason in found


def test_another_master_or_spark_connect_needs_a_cold_runner() -> None:
    assert "is not the spares'" in (cold_reason({}, "local[2]", MASTER) or "")
    connect = "sc://localhost:15002"
    assert "Spark Connect" in (cold_reason({}, connect, connect) or "")


def test_only_runtime_sql_conf_is_set_on_the_live_session() -> None:
    conf = {
        "spark.master": MASTER,
        "spark.app.name": "x",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "3",
    }
    assert runtime_conf(conf) == {"spark.sql.shuffle.partitions": "3"}
    assert is_runtime_sql_conf("spark.sql.catalog.lake")  # catalog plugins load lazily
    assert not is_runtime_sql_conf("spark.sql.streaming.ui.enabled")


# ---------------------------------------------------------------- protocol


def test_a_spare_is_started_as_a_runner_with_prewarm_arguments() -> None:
    argv = spare_command(7, spark_master="local[1]", deadman_timeout=2.0, python="/opt/py")
    assert argv[: len(runner_command(7, "/opt/py"))] == runner_command(7, "/opt/py")
    assert argv[-5:] == ["--prewarm", "--spark-master", "local[1]", "--deadman-timeout", "2.0"]


def test_ready_event_and_launch_workdir_round_trip() -> None:
    event = ReadyEvent(pid=42, seconds=1.5)
    decoded = decode_event(encode_event(event))
    assert isinstance(decoded, ReadyEvent) and decoded.pid == 42 and decoded.seconds == 1.5
    spec = JobSpec(job_id="job-1")
    launch = LaunchDocument(
        job_id="job-1",
        attempt=1,
        epoch=1,
        spec=spec,
        artifact_path="/a/p.py",
        checkpoint_dir="/c",
        deadman_timeout=2.0,
        workdir="/w/job-1/1",
    )
    assert LaunchDocument.from_json(launch.to_json()).workdir == "/w/job-1/1"


def test_prewarm_without_a_deadman_timeout_is_a_usage_error() -> None:
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", RUNNER_MODULE, "--events-fd", str(write_end), "--prewarm"],
            pass_fds=(write_end,),
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.returncode == EXIT_USAGE
    assert b"--prewarm needs a positive --deadman-timeout" in done.stderr


# ---------------------------------------------------------------- the launch line of a spare


def test_the_collector_skips_heartbeats_and_joins_split_chunks() -> None:
    collector = LaunchLineCollector()
    for chunk in (b"\n", b"\n\n", b'{"a": ', b"1}", b"\n\n", b"late"):
        collector.feed(chunk)
    assert collector.wait(0) == b'{"a": 1}'


def test_the_collector_reports_silence_and_an_endless_line() -> None:
    with pytest.raises(LaunchError, match="within"):
        LaunchLineCollector().wait(0.01)
    collector = LaunchLineCollector()
    collector.feed(b"x" * (16 * 1024 * 1024 + 1))
    with pytest.raises(LaunchError, match="longer than"):
        collector.wait(0)


def test_the_deadman_switch_hands_every_chunk_it_reads_to_on_data() -> None:
    read_end, write_end = os.pipe()
    fired = threading.Event()
    collector = LaunchLineCollector()
    switch = DeadmanSwitch(read_end, 30.0, fire=lambda _reason: fired.set(), on_data=collector.feed)
    switch.start()
    os.write(write_end, b"\n\n{}\n")
    assert collector.wait(10.0) == b"{}"
    os.close(write_end)  # EOF: the parent is gone
    assert fired.wait(10.0)
    os.close(read_end)


def _launch(**fields: object) -> LaunchDocument:
    values: dict[str, object] = {
        "job_id": "j",
        "attempt": 1,
        "epoch": 1,
        "spec": JobSpec(job_id="j"),
        "artifact_path": "/work/j/1/artifact/p.py",
        "checkpoint_dir": "/ck/j",
        "deadman_timeout": 10.0,
    }
    return LaunchDocument.model_validate({**values, **fields})


def test_a_job_without_files_or_environment_may_use_a_spare() -> None:
    assert files_cold_reason(_launch()) is None


def test_a_job_with_files_needs_a_cold_runner() -> None:
    jar = LocalDependency(kind=DependencyKind.JAR, path="/cache/x.jar", link_name="x.jar")
    reason = files_cold_reason(_launch(dependencies=[jar]))
    assert reason is not None and "1 file" in reason


def test_a_job_with_environment_variables_needs_a_cold_runner() -> None:
    """A spare's environment (and its JVM's) was fixed before the job was known."""
    reason = files_cold_reason(_launch(spec=JobSpec(job_id="j", env={"GREETING": "hi"})))
    assert reason is not None and "environment variables" in reason


def test_a_job_with_its_own_python_needs_a_cold_runner() -> None:
    reason = files_cold_reason(_launch(python_env="/cache/envs/abc"))
    assert reason is not None and "Python environment" in reason
