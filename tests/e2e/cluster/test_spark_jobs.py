"""Real PySpark pipelines through a real cluster (JobManager and TaskManager processes)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from e2e.wordcounts import (
    SAMPLE,
    count_words,
    read_csv_counts,
    read_json_counts,
    split_into_files,
)
from steward.testing.processes import ProcessCluster
from steward.wire.jobs import JobKind
from support import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

EXAMPLES = Path(__file__).parents[3] / "examples"
SPARK_DEADLINE = 240.0


@pytest.mark.slow  # ~50 s; in the default run: test_scripts' word count through a cluster and
# test_standalone's SDK pipeline through a cluster on Spark's standalone master
def test_wordcount_through_the_cluster_counts_like_plain_python(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    expected = count_words(SAMPLE.read_text())
    output = tmp_path / "counts"
    with process_cluster.client() as client:
        client.submit(EXAMPLES / "wordcount.py", args=[str(SAMPLE), str(output)], job_id="wc")
        result = client.wait("wc", timeout=SPARK_DEADLINE)
        assert result.state.value == "FINISHED", result.error
        assert result.value == {"words": sum(expected.values()), "distinct": len(expected)}
        # The initialize hook refuses an existing output (seed 000's case): a second run of
        # the same pipeline into the same folder fails in initialize and runs no attempt.
        client.submit(EXAMPLES / "wordcount.py", args=[str(SAMPLE), str(output)], job_id="wc-2")
        again = client.wait("wc-2", timeout=SPARK_DEADLINE)
        assert again.state.value == "FAILED"
        assert again.error is not None and "already exists" in again.error.message
    assert read_csv_counts(output) == dict(expected)
    process_cluster.check_alive()


@pytest.mark.slow
def test_streaming_taskmanager_killed_resumes_on_the_other_taskmanager(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    files = 12
    texts = split_into_files(tmp_path / "incoming", files)
    expected = count_words(*texts)
    output = tmp_path / "counts"
    process_cluster.start_jobmanager("jm-1")
    taskmanagers = {
        "tm-1": process_cluster.start_taskmanager("tm-1", slots=1),
        "tm-2": process_cluster.start_taskmanager("tm-2", slots=1),
    }
    process_cluster.wait_ready(taskmanagers=2)
    with process_cluster.client(timeout=60) as client:
        client.submit(
            EXAMPLES / "streaming_wordcount.py",
            args=[str(tmp_path / "incoming"), str(output), "--until-done"],
            job_id="stream",
            kind=JobKind.STREAMING,
        )
        first = wait_until(
            lambda: (v := client.job("stream")).checkpoints and v,
            SPARK_DEADLINE,
            interval=0.2,
            message="first micro-batch recorded",
        )
        victim = first.attempts[-1].taskmanager
        taskmanagers[victim].signal(signal.SIGKILL)
        result = client.wait("stream", timeout=SPARK_DEADLINE)
        assert result.state.value == "FINISHED", result.error
        assert result.value == {"words": sum(expected.values()), "distinct": len(expected)}
    assert read_json_counts(output) == dict(expected)
    survivor = next(tm for tm in taskmanagers if tm != victim)
    log = (process_cluster.workdir / "logs" / "jm-1.log").read_text()
    assert f"attempt deployed job=stream attempt=2 tm={survivor}" in log
