"""spark-submit scripts, unchanged, through a real cluster (JobManager and TaskManager).

The script is written the way Apache Spark's own Python examples are: a ``__main__`` guard,
``sys.argv``, ``SparkSession.builder.getOrCreate()``, a usage message and ``sys.exit(-1)``.

The module's tests share one cluster (one JobManager, one TaskManager): none kills or cuts off
a process, each uses job ids of its own and ends with the cluster's processes alive.
"""

from __future__ import annotations

import json
import secrets
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.wordcounts import SAMPLE, count_words
from steward.errors import JobNotFoundError, JobRejectedError
from steward.testing.processes import ProcessCluster
from steward.wire.jobs import NoRestart
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

SPARK_DEADLINE = 240.0
QUICK_DEADLINE = 60.0
SMALL_SPARK = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "700m",
}

WORDCOUNT_SCRIPT = """
import json
import re
import sys

from pyspark.sql import SparkSession

if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("Usage: wordcount <file> <output.json>", file=sys.stderr)
        sys.exit(-1)
    spark = SparkSession.builder.appName("PythonWordCount").getOrCreate()
    lines = spark.read.text(sys.argv[1]).rdd.map(lambda row: row[0])
    counts = (
        lines.flatMap(lambda line: re.findall(r"[a-z]+", line.lower()))
        .map(lambda word: (word, 1))
        .reduceByKey(lambda a, b: a + b)
        .collect()
    )
    with open(sys.argv[2], "w") as out:
        json.dump(dict(counts), out)
    print(f"{len(counts)} distinct words")
    spark.stop()
"""


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    workdir = tmp_path_factory.mktemp("scripts-cluster")
    with ProcessCluster(
        workdir, zookeeper.connect_string, f"t-scripts-{secrets.token_hex(4)}"
    ) as cluster:
        cluster.start_one_of_each()
        yield cluster


def write_script(folder: Path, source: str, name: str = "wordcount_app.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.spark
def test_unmodified_wordcount_script_finishes_with_the_right_counts(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "code", WORDCOUNT_SCRIPT)
    output = tmp_path / "counts.json"
    with cluster.client() as client:
        client.submit(
            script, args=[str(SAMPLE), str(output)], job_id="script-wc", spark_conf=SMALL_SPARK
        )
        result = client.wait("script-wc", timeout=SPARK_DEADLINE)
        assert result.state.value == "FINISHED", result.error
        attempts = client.job("script-wc").attempts
    assert json.loads(output.read_text()) == dict(count_words(SAMPLE.read_text()))
    app = attempts[-1].spark_app
    assert app is not None and app.app_id.startswith("local-")
    assert app.master == "local[2]"
    # The driver's temporary files were in the attempt's folder (steward.taskmanager.scratch),
    # as its event log says, and went with the attempt.
    scratch = cluster.workdir / "work" / "tm-1" / "script-wc" / "1" / "tmp"
    assert jvm_property(cluster.workdir / "storage", app.app_id, "java.io.tmpdir") == str(scratch)
    wait_until(lambda: not scratch.exists(), QUICK_DEADLINE, message="the attempt's scratch gone")


def jvm_property(storage: Path, app_id: str, name: str) -> str | None:
    """A system property of application ``app_id``'s driver JVM, from its event log in the
    cluster's storage (``spark-events/``, zstd-compressed rolling files)."""
    import zstandard  # Spark Connect's client needs it too: installed with pyspark[connect]

    for part in sorted((storage / "spark-events").glob(f"eventlog_v2_{app_id}/events_*")):
        with zstandard.ZstdDecompressor().stream_reader(part.open("rb")) as reader:
            for line in reader.read().decode().splitlines():
                event = json.loads(line)
                if event["Event"] == "SparkListenerEnvironmentUpdate":
                    return str(event["System Properties"].get(name))
    return None


def test_script_with_wrong_arguments_fails_with_its_usage_message(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "code", WORDCOUNT_SCRIPT)
    with cluster.client() as client:
        client.submit(script, args=["only-one"], job_id="script-usage", restart=NoRestart())
        result = client.wait("script-usage", timeout=QUICK_DEADLINE)
    assert result.state.value == "FAILED"
    assert result.error is not None
    assert result.error.message.startswith("the script exited with status -1")
    assert "Usage: wordcount <file> <output.json>" in result.error.message


@pytest.mark.parametrize(
    ("source", "refusal"),
    [
        ("if __name__ == '__main__':\n    print('x'\n", "SyntaxError"),
        ("def mian(ctx):\n    return 1\n", "defines no main"),
    ],
    ids=["syntax-error", "no-entrypoint"],
)
def test_code_no_attempt_could_run_is_refused_at_submission_and_nothing_stored(
    cluster: ProcessCluster, tmp_path: Path, source: str, refusal: str
) -> None:
    script = write_script(tmp_path / "code", source, "broken_app.py")
    with cluster.client() as client:
        before = {job.job_id for job in client.jobs()}  # the module's other tests' jobs
        with pytest.raises(JobRejectedError, match=refusal):
            client.submit(script, job_id="broken")
        with pytest.raises(JobNotFoundError):
            client.job("broken")
        assert {job.job_id for job in client.jobs()} == before
