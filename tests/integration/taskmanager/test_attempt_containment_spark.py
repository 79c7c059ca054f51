"""The issue's proof on real PySpark: a UDF's process that left every group of the attempt.

The pipeline runs a UDF in PySpark's Python worker, which its worker daemon
(``pyspark/daemon.py``) forked after ``os.setpgid(0, 0)``: the worker is outside the runner's
process group. The UDF starts ``sleep 600`` with ``start_new_session=True``, a session of its
own. When the attempt ends, or is cancelled, that sleeper must be dead before the attempt is
reported ENDED and before its lease is released; so must the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from scripted_leader import ScriptedLeader, start_command

from escapers import kill_sleepers
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import AttemptReport, CancelAttempt
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from support import pid_alive, wait_until

# Each test starts a JVM: ~10 s on an idle machine, several times that on a shared one.
pytestmark = [pytest.mark.zookeeper, pytest.mark.spark, pytest.mark.slow]

JOB = "job-udf"
SPARK_DEADLINE = 240.0
SPARK_KEYS = {"spark.master": "local[1]"}

UDF_ESCAPER = """
import os
import subprocess
import tempfile
import time

from pyspark.sql.functions import udf


def escape(_value):
    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True)
    return f"{os.getpid()} {os.getpgid(0)} {sleeper.pid} {tempfile.gettempdir()}"


def main(ctx):
    spark = ctx.spark
    spark.conf.set("spark.sql.execution.pythonUDF.arrow.enabled", "false")
    row = spark.range(1).select(udf(escape)("id").alias("r")).collect()[0]
    worker, worker_pgid, sleeper, worker_tmp = row.r.split()
    jvm = spark.sparkContext._jvm
    ctx.report_progress(
        runner=os.getpid(),
        worker=int(worker),
        worker_pgid=int(worker_pgid),
        sleeper=int(sleeper),
        runner_tmp=tempfile.gettempdir(),
        worker_tmp=worker_tmp,
        jvm_tmp=jvm.java.lang.System.getProperty("java.io.tmpdir"),
        local_dir=spark.sparkContext._conf.get("spark.local.dir", ""),
    )
    while not os.path.exists(ctx.args[0]):
        time.sleep(0.05)
    return {"sleeper": sleeper}
"""


@pytest.fixture
def sleepers() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    kill_sleepers(pids)


def attempt_scratch(tmp_path: Path) -> Path:
    """The scratch folder of attempt 1 of JOB on tm-1 (taskmanager.workdir: tmp_path/work)."""
    return tmp_path / "work" / "tm-1" / JOB / "1" / "tmp"


def start_udf_job(
    leader: ScriptedLeader, blobs: BlobStore, gate: Path, sleepers: list[int]
) -> AttemptReport:
    leader.command(start_command(blobs, JOB, leader.epoch, args=[str(gate)], source=UDF_ESCAPER))
    report = leader.wait_report(lambda r: r.progress is not None, JOB, timeout=SPARK_DEADLINE)
    assert report.progress is not None
    folders = ("runner_tmp", "worker_tmp", "jvm_tmp", "local_dir")
    scratch = {key: str(report.progress[key]) for key in folders}
    progress = {key: int(str(v)) for key, v in report.progress.items() if key not in folders}
    sleepers.append(progress["sleeper"])
    # Every process of the attempt writes its temporary files in the attempt's folder, where
    # they die with it: the runner and Spark's Python worker (TMPDIR), the driver JVM
    # (java.io.tmpdir, hence spark.local.dir's default: blockmgr-*, spark-*).
    expected = str(attempt_scratch(gate.parent))
    assert scratch["runner_tmp"] == scratch["worker_tmp"] == scratch["jvm_tmp"] == expected
    assert scratch["local_dir"] == "", "spark.local.dir left to its default"
    spark_dirs = [p.name.split("-")[0] for p in Path(scratch["jvm_tmp"]).iterdir()]
    assert {"spark", "blockmgr"} <= set(spark_dirs), spark_dirs
    assert progress["worker"] != progress["runner"]
    assert progress["worker_pgid"] != progress["runner"], "the worker left the runner's group"
    assert pid_alive(progress["sleeper"]) and pid_alive(progress["worker"])
    return report


def assert_nothing_left(
    leader: ScriptedLeader, observer: ExecutionLeases, report: AttemptReport
) -> FailedEvent | FinishedEvent:
    """Wait for ENDED and the lease's release; the UDF's sleeper and worker are dead at both."""
    assert report.progress is not None
    pids = [int(str(report.progress[key])) for key in ("sleeper", "worker")]

    def ended() -> tuple[list[int], FailedEvent | FinishedEvent] | None:
        latest = leader.latest(JOB)
        if latest is None or latest.phase is not AttemptPhase.ENDED:
            return None
        assert latest.outcome is not None
        return ([pid for pid in pids if pid_alive(pid)], latest.outcome)

    def released() -> tuple[list[int]] | None:
        if observer.held(JOB) is not None:
            return None
        return ([pid for pid in pids if pid_alive(pid)],)

    alive_at_end, outcome = wait_until(ended, 60, message="attempt ENDED")
    assert alive_at_end == [], "reported ENDED while processes of the attempt live"
    (alive_at_release,) = wait_until(released, 30, message="lease released")
    assert alive_at_release == [], "lease released while processes of the attempt live"
    return outcome


def test_a_udfs_process_in_its_own_session_dies_with_the_attempt(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
    sleepers: list[int],
) -> None:
    leader = scripted()
    taskmanager("tm-1", **SPARK_KEYS)
    gate = tmp_path / "gate"
    report = start_udf_job(leader, blobs, gate, sleepers)

    gate.touch()

    outcome = assert_nothing_left(leader, ExecutionLeases(leader.session, "observer"), report)
    assert isinstance(outcome, FinishedEvent)


def test_a_udfs_process_in_its_own_session_dies_with_a_cancelled_attempt(
    tmp_path: Path,
    scripted: Callable[..., ScriptedLeader],
    taskmanager: Callable[..., TaskManager],
    blobs: BlobStore,
    sleepers: list[int],
) -> None:
    host_tmp = tmp_path / "host-tmp"  # the TaskManager's own: its attempts use theirs
    host_tmp.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(host_tmp))  # while the runner's environment is made
        leader = scripted()
        taskmanager("tm-1", **SPARK_KEYS, **{"taskmanager.workdir.retention": "1h"})
        report = start_udf_job(leader, blobs, tmp_path / "never", sleepers)

    leader.command(CancelAttempt(job_id=JOB, attempt=1, epoch=leader.epoch, grace=10.0))

    outcome = assert_nothing_left(leader, ExecutionLeases(leader.session, "observer"), report)
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.wire.runner_protocol.AttemptCancelled"
    # Its scratch goes as soon as the attempt is forgotten, long before the folder's retention
    # (its log stays); nothing of the JVM or the Python worker was in the host's TMPDIR.
    scratch = attempt_scratch(tmp_path)
    wait_until(lambda: not scratch.exists(), 60, message="the attempt's scratch removed")
    assert (scratch.parent / "runner.log").is_file()
    assert list(host_tmp.iterdir()) == []
