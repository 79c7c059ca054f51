"""Warm spare runners in a real TaskManager, with real PySpark, against a scripted leader.

Given a TaskManager with ``taskmanager.spark.prewarm-runners`` = 1: an attempt of a job whose
spark_conf a live session can take runs in the spare's process (the pid the spare had before
the start command) and gets a working SparkSession with the job's SQL conf; the spare is
replaced by a new one; a job with a start-up-only conf gets a cold runner while the spare
waits on; a cancelled attempt on a spare is gone with its JVM; and a SIGKILLed TaskManager
process takes its spare and the spare's JVM with it (dead-man's switch, rule 4).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from rig import Rig
from scripted_leader import GATED, start_command

from steward.taskmanager.manager import TaskManager
from steward.wire.heartbeat import CancelAttempt
from steward.wire.runner_protocol import (
    AttemptCancelled,
    FailedEvent,
    FinishedEvent,
    error_type_name,
)
from steward.wire.states import AttemptPhase
from support import pid_alive, wait_until

# Each test starts one JVM (~10 s on an idle machine), the first two (plus a replacement).
pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

# A JVM start takes ~10 s on an idle 2-core machine; several times that when it is shared.
WARM_DEADLINE = 240.0
PREWARM = {"taskmanager.spark.prewarm-runners": "1", "spark.master": "local[1]"}

SPARK_PROBE = """
import os

def main(ctx):
    spark = ctx.spark
    count = spark.range(5).count()
    spark.range(3).write.parquet("relative-output")
    return {
        "pid": os.getpid(),
        "count": count,
        "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "relative": os.path.isdir(os.path.join(os.getcwd(), "relative-output")),
        "cwd": os.getcwd(),
    }
"""

SPARK_GATED = """
import os
import time

def main(ctx):
    ctx.spark.range(1).count()
    ctx.report_progress(pid=os.getpid())
    while not os.path.exists(ctx.args[0]):
        time.sleep(0.05)
"""


def java_children(pid: int) -> list[int]:
    with contextlib.suppress(psutil.Error):
        return [
            child.pid
            for child in psutil.Process(pid).children(recursive=True)
            if child.name() == "java"
        ]
    return []


def java_cmdline(pid: int) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(psutil.Process(pid).cmdline())
    return ""


def ready_spare(manager: TaskManager) -> int:
    assert manager.spares is not None
    pool = manager.spares
    pids = wait_until(pool.ready_pids, WARM_DEADLINE, message="a warm spare")
    return pids[0]


@pytest.mark.slow
def test_a_compatible_job_runs_on_the_warm_spare_which_is_replaced_and_others_go_cold(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-warm", **PREWARM)
    spare = ready_spare(manager)

    leader.command(
        start_command(
            rig.blobs,
            "job-warm",
            leader.epoch,
            args=[],
            source=SPARK_PROBE,
            spark_conf={"spark.sql.shuffle.partitions": "3", "spark.master": "local[1]"},
        )
    )
    report = leader.wait_phase("job-warm", AttemptPhase.ENDED, timeout=WARM_DEADLINE)

    assert isinstance(report.outcome, FinishedEvent), report.outcome
    value = report.outcome.value
    assert isinstance(value, dict)
    assert value["pid"] == spare, "the attempt ran in the spare's process"
    assert value["count"] == 5
    assert value["partitions"] == "3", "the job's SQL conf was set on the warm session"
    assert value["relative"] is True, "relative paths resolve in the attempt's folder"
    assert value["cwd"] == str(manager.workdir / "job-warm" / "1")
    assert "spare ready" in (manager.workdir / "job-warm" / "1" / "runner.log").read_text()

    replacement = wait_until(
        lambda: [pid for pid in manager.spares.ready_pids() if pid != spare],  # type: ignore[union-attr]
        WARM_DEADLINE,
        message="a new warm spare",
    )[0]
    assert not pid_alive(spare)

    # spark.driver.memory is read when the JVM starts: a live session cannot take it.
    gate = tmp_path / "gate"
    leader.command(
        start_command(
            rig.blobs,
            "job-cold",
            leader.epoch,
            args=[str(gate)],
            source=GATED,
            spark_conf={"spark.driver.memory": "1g"},
        )
    )
    cold = leader.wait_report(lambda r: r.progress is not None, "job-cold", timeout=60)
    assert cold.pid is not None and cold.pid != replacement
    assert manager.spares.ready_pids() == [replacement], "the spare waits on"  # type: ignore[union-attr]
    gate.touch()
    ended = leader.wait_phase("job-cold", AttemptPhase.ENDED, timeout=60)
    assert isinstance(ended.outcome, FinishedEvent)


def test_a_cancelled_attempt_on_a_warm_spare_is_gone_with_its_jvm(tmp_path: Path, rig: Rig) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-cancel", **PREWARM)
    spare = ready_spare(manager)
    jvms = java_children(spare)
    assert jvms, "the spare's JVM runs"
    # It writes the event log a cold runner would: the storage's spark-events folder.
    events = tmp_path / "storage" / "spark-events"
    logs = wait_until(lambda: list(events.iterdir()), 30.0, message="the spare's event log")
    assert [log.name for log in logs if log.name.startswith("eventlog_v2_local-")], logs

    command = start_command(
        rig.blobs, "job-c", leader.epoch, args=[str(tmp_path / "never")], source=SPARK_GATED
    )
    leader.command(command)
    running = leader.wait_report(lambda r: r.progress is not None, "job-c", timeout=60)
    assert running.pid == spare
    # Its temporary files are in the spare's own scratch folder, not the host's /tmp: the
    # JVM was told so, and Spark's folders are there (steward.taskmanager.scratch).
    scratch = manager.workdir / ".spares" / "spare-1" / "tmp"
    assert any(f"-Djava.io.tmpdir={scratch}" in java_cmdline(pid) for pid in jvms), jvms
    kinds = {entry.name.split("-")[0] for entry in scratch.iterdir()}
    assert {"spark", "blockmgr"} <= kinds, kinds

    leader.command(CancelAttempt(job_id="job-c", attempt=1, epoch=leader.epoch, grace=5.0))
    report = leader.wait_phase("job-c", AttemptPhase.ENDED, timeout=60)

    assert isinstance(report.outcome, FailedEvent)
    assert report.outcome.error.type == error_type_name(AttemptCancelled)
    assert not pid_alive(spare)
    assert not any(pid_alive(pid) for pid in jvms), "the spare's JVM went with the attempt"
    # The scratch goes as soon as the spare's processes are gone; its folder waits for the
    # retention (an hour here).
    wait_until(lambda: not scratch.exists(), 30.0, message="the spare's scratch removed")
    assert scratch.parent.is_dir()


# ---------------------------------------------------------------- a TaskManager process


def test_a_sigkilled_taskmanager_takes_its_spare_and_the_spares_jvm_with_it(
    tmp_path: Path,
    tm_process: Callable[..., subprocess.Popen[bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host_tmp = tmp_path / "host-tmp"  # the TaskManager's own TMPDIR: the spare's is its folder's
    host_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(host_tmp))
    process = tm_process("tm-k", **PREWARM)
    spare_folder = tmp_path / "work" / "tm-k" / ".spares" / "spare-1"
    spare_log = spare_folder / "runner.log"
    wait_until(
        lambda: spare_log.is_file() and "spare ready" in spare_log.read_text(),
        WARM_DEADLINE,
        message="the spare is warm",
    )
    family = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
    assert any(java_children(pid) for pid in family), "a spare with a JVM"

    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    # The spare's dead-man's switch (2 s) fires on EOF at once; generous for a loaded machine.
    wait_until(
        lambda: not any(pid_alive(pid) for pid in family), 60.0, message="spare and JVM gone"
    )
    # SIGKILL: no JVM shutdown hook ran. Its scratch (java.io.tmpdir, the default
    # spark.local.dir) was the spare folder's, none of it in the host's temporary folder.
    left = sorted(entry.name.split("-")[0] for entry in (spare_folder / "tmp").iterdir())
    assert {"spark", "blockmgr"} <= set(left), left
    assert list(host_tmp.iterdir()) == []
    # The TaskManager restarted (without spares, which would clear .spares/ themselves): the
    # dead spare's scratch goes at once, its folder (its log) after the retention.
    tm_process(
        "tm-k",
        **{"taskmanager.spark.prewarm-runners": "0", "taskmanager.workdir.retention": "1h"},
    )
    scratch = spare_folder / "tmp"
    wait_until(lambda: not scratch.exists(), 30.0, message="the dead spare's scratch removed")
    assert spare_log.is_file()
