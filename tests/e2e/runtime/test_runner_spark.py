"""The runner with real PySpark: the examples give the right counts, stages and streams resume.

Expected counts are computed here in plain Python with the examples' definition of a word
(a maximal run of a-z after lower-casing), never with Spark.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from runner_harness import EXAMPLES, SAMPLE, launch_document, running

from e2e.wordcounts import (
    committed_batches,
    count_words,
    read_csv_counts,
    read_json_counts,
    split_into_files,
)
from steward.wire.runner_protocol import FailedEvent, FinishedEvent, completed_stages_of
from support import pid_alive, wait_until

pytestmark = pytest.mark.spark

SPARK_DEADLINE = 180.0


# Slow (about 35 s): tests/e2e/cluster/test_spark_jobs.py counts the same example through a
# whole cluster in the default suite.
@pytest.mark.slow
def test_wordcount_counts_the_sample_like_plain_python(tmp_path: Path) -> None:
    expected = count_words(SAMPLE.read_text())
    output = tmp_path / "counts"
    launch = launch_document(
        EXAMPLES / "wordcount.py",
        tmp_path / "ck",
        args=[str(SAMPLE), str(output)],
        spark=True,
    )
    with running(tmp_path / "work", launch) as runner:
        final = runner.wait_final(SPARK_DEADLINE)

        assert isinstance(final, FinishedEvent), runner.log()
        assert final.value == {"words": sum(expected.values()), "distinct": len(expected)}
        assert read_csv_counts(output) == dict(expected)
        stages = [c for c in runner.checkpoints() if c["kind"] == "stage"]
        words_stage = str(tmp_path / "ck" / "stages" / "words")
        assert stages == [
            {
                "kind": "stage",
                "stage": "words",
                "path": words_stage,
                "stages": {"words": words_stage},
            }
        ]
        # The JVM goes with the runner.
        wait_until(lambda: runner.group_members() == [], 30.0, message="group gone")


STAGED = """
from pyspark.sql import functions as sf

def main(ctx):
    def build():
        with open({marker!r}, "a") as marker:
            marker.write(f"built by attempt {{ctx.attempt}}\\n")
        lines = ctx.spark.read.text({source!r})
        words = sf.explode(sf.split(sf.lower(sf.col("value")), "[^a-z]+")).alias("word")
        return lines.select(words).where(sf.col("word") != "")

    words = ctx.stage("words", build)
    if ctx.attempt == 1:
        raise RuntimeError("attempt 1 dies after its stage")
    return {{"words": words.count(), "reused": sorted(ctx.completed_stages)}}
"""


def test_a_second_attempt_reuses_the_completed_stage_without_building_it(tmp_path: Path) -> None:
    source = tmp_path / "input.txt"
    source.write_text(SAMPLE.read_text())
    marker = tmp_path / "built"
    code = tmp_path / "code" / "staged.py"
    code.parent.mkdir()
    code.write_text(textwrap.dedent(STAGED.format(marker=str(marker), source=str(source))))
    checkpoint_dir = tmp_path / "ck"
    expected_words = sum(count_words(SAMPLE.read_text()).values())

    with running(
        tmp_path / "attempt-1", launch_document(code, checkpoint_dir, spark=True)
    ) as first:
        assert isinstance(first.wait_final(SPARK_DEADLINE), FailedEvent)
        last_checkpoint = first.checkpoints()[-1]
    assert marker.read_text() == "built by attempt 1\n"
    # The input is gone: had attempt 2 called build, reading it would fail.
    source.unlink()

    second_launch = launch_document(
        code,
        checkpoint_dir,
        spark=True,
        attempt=2,
        is_recovery=True,
        completed_stages=completed_stages_of(last_checkpoint),
        last_checkpoint=last_checkpoint,
    )
    with running(tmp_path / "attempt-2", second_launch) as second:
        final = second.wait_final(SPARK_DEADLINE)

        assert isinstance(final, FinishedEvent), second.log()
        assert final.value == {"words": expected_words, "reused": ["words"]}
        assert marker.read_text() == "built by attempt 1\n"
        assert second.checkpoints() == []  # nothing new was materialised


@pytest.mark.slow
def test_streaming_wordcount_killed_mid_stream_resumes_with_no_count_lost_or_doubled(
    tmp_path: Path,
) -> None:
    files = 12
    texts = split_into_files(tmp_path / "incoming", files)
    expected = count_words(*texts)
    output = tmp_path / "counts"
    checkpoint_dir = tmp_path / "ck"
    query_checkpoint = checkpoint_dir / "streaming" / "wordcount"
    args = [str(tmp_path / "incoming"), str(output), "--until-done"]

    def micro_batches(runner_checkpoints: list[dict[str, object]]) -> list[dict[str, object]]:
        return [c for c in runner_checkpoints if c["kind"] == "micro-batch"]

    first_launch = launch_document(
        EXAMPLES / "streaming_wordcount.py", checkpoint_dir, args=args, spark=True
    )
    with running(tmp_path / "attempt-1", first_launch) as first:
        first.wait_event(
            lambda e: getattr(e, "metadata", {}).get("kind") == "micro-batch",
            SPARK_DEADLINE,
            "first micro-batch",
        )
        first.kill_group()
        assert first.wait_exit(30.0) == -9
        wait_until(lambda: first.group_members() == [], 30.0, message="attempt 1 group gone")
        reported = micro_batches(first.checkpoints())
    committed = committed_batches(query_checkpoint)
    assert 1 <= committed < files, f"not killed mid-stream: {committed} of {files} committed"
    assert [c["batchId"] for c in reported] == list(range(len(reported)))

    second_launch = launch_document(
        EXAMPLES / "streaming_wordcount.py",
        checkpoint_dir,
        args=args,
        spark=True,
        attempt=2,
        is_recovery=True,
        last_checkpoint=reported[-1],
    )
    with running(tmp_path / "attempt-2", second_launch) as second:
        final = second.wait_final(SPARK_DEADLINE)

        assert isinstance(final, FinishedEvent), second.log()
        resumed = micro_batches(second.checkpoints())
        # Spark resumed after the last committed batch instead of starting over.
        assert resumed and resumed[0]["batchId"] == committed
        assert resumed[-1]["batchId"] == files - 1
        assert final.value == {"words": sum(expected.values()), "distinct": len(expected)}
    assert read_json_counts(output) == dict(expected)


JVM_THEN_SLEEP = """
import time

def main(ctx):
    ctx.spark.range(10).count()
    ctx.report_progress(spark="up")
    time.sleep(1000)
"""


def test_the_dead_man_switch_takes_the_spark_jvm_down_with_the_runner(tmp_path: Path) -> None:
    code = tmp_path / "code" / "jvm_then_sleep.py"
    code.parent.mkdir()
    code.write_text(textwrap.dedent(JVM_THEN_SLEEP))
    launch = launch_document(code, tmp_path / "ck", spark=True, deadman_timeout=3.0)
    with running(tmp_path / "work", launch) as runner:
        runner.wait_event(
            lambda e: getattr(e, "progress", {}).get("spark") == "up", SPARK_DEADLINE, "Spark up"
        )
        jvms = [p.pid for p in psutil.Process(runner.pid).children() if p.name() == "java"]
        assert jvms, "no JVM under the runner"

        runner.stop_feeding()

        assert runner.wait_exit(3.0 + 30.0) == -9
        wait_until(lambda: not any(pid_alive(pid) for pid in jvms), 30.0, message="JVM gone")
        wait_until(lambda: runner.group_members() == [], 30.0, message="group gone")


WORKER_PYTHON = """
import sys

def main(ctx):
    rdd = ctx.spark.sparkContext.parallelize([0, 1], 2)
    workers = rdd.map(lambda _: sys.executable).collect()
    return {"driver": sys.executable, "workers": sorted(set(workers))}
"""


def test_spark_python_workers_run_the_runners_interpreter_not_python3_from_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A python3 first on PATH that is not the runner's interpreter (a pyenv shim, a system
    # Python): PySpark's own default would start the workers with it.
    shims = tmp_path / "shims"
    shims.mkdir()
    used = tmp_path / "shim-used"
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\ntouch {used}\nexec {sys.executable} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    pipeline = tmp_path / "worker_python.py"
    pipeline.write_text(WORKER_PYTHON)
    launch = launch_document(pipeline, tmp_path / "ck", spark=True)
    with running(tmp_path / "work", launch) as runner:
        final = runner.wait_final(SPARK_DEADLINE)

    assert isinstance(final, FinishedEvent), runner.log()
    assert final.value["workers"] == [final.value["driver"]]
    assert not used.exists()
