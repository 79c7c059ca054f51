"""Sessions user code builds itself get the job's master and settings, as under spark-submit.

Real runners with real PySpark: a script's ``SparkSession.builder.getOrCreate()`` and
``SparkContext(...)``, and a pipeline that builds its own session beside ``ctx.spark``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from runner_harness import SPARK_TEST_MASTER, launch_document, running

from steward.wire.jobs import ProgramKind
from steward.wire.runner_protocol import FinishedEvent, SparkAppEvent

pytestmark = pytest.mark.spark

SPARK_DEADLINE = 180.0
JOB_CONF = {"spark.steward.test.marker": "from-the-job", "spark.driver.memory": "600m"}


def write(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def test_script_session_gets_the_jobs_master_and_conf_and_is_reported(
    tmp_path: Path,
) -> None:
    out = tmp_path / "seen.json"
    script = write(
        tmp_path / "code",
        "app.py",
        """
        import json, sys
        from pyspark.sql import SparkSession

        if __name__ == "__main__":
            spark = SparkSession.builder.appName("PythonWordCount").getOrCreate()
            conf = spark.sparkContext.getConf()
            seen = {
                "master": spark.sparkContext.master,
                "marker": conf.get("spark.steward.test.marker"),
                "memory": conf.get("spark.driver.memory"),
                "name": spark.sparkContext.appName,
                "rows": spark.range(10).count(),
                "app_id": spark.sparkContext.applicationId,
            }
            with open(sys.argv[1], "w") as f:
                json.dump(seen, f)
            spark.stop()
        """,
    )
    launch = launch_document(
        script,
        tmp_path / "ck",
        args=[str(out)],
        program=ProgramKind.SCRIPT,
        spark=True,
        spark_conf=JOB_CONF,
    )
    with running(tmp_path / "work", launch) as runner:
        final = runner.wait_final(SPARK_DEADLINE)
        assert isinstance(final, FinishedEvent), runner.log()

    seen = json.loads(out.read_text())
    apps = [e.app for e in runner.events if isinstance(e, SparkAppEvent)]
    assert [app.app_id for app in apps] == [seen.pop("app_id")]  # reported once, the right one
    assert apps[0].master == SPARK_TEST_MASTER
    assert seen == {
        "master": SPARK_TEST_MASTER,
        "marker": "from-the-job",
        "memory": "600m",  # read when the JVM starts: only spark-submit's route carries it
        "name": "PythonWordCount",  # the code's own setting wins, as under spark-submit
        "rows": 10,
    }


def test_pipeline_built_session_and_ctx_spark_are_one_session(tmp_path: Path) -> None:
    pipeline = write(
        tmp_path / "code",
        "own_session.py",
        """
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        def main(ctx):
            own = SparkSession.builder.getOrCreate()
            context = SparkContext.getOrCreate()
            return {
                "same": own is ctx.spark,
                "same_jvm_app": own.sparkContext.applicationId
                == ctx.spark.sparkContext.applicationId,
                "same_context": context is ctx.spark.sparkContext,
                "master": own.sparkContext.master,
                "marker": own.sparkContext.getConf().get("spark.steward.test.marker"),
            }
        """,
    )
    launch = launch_document(
        pipeline, tmp_path / "ck", program=ProgramKind.SDK, spark=True, spark_conf=JOB_CONF
    )
    with running(tmp_path / "work", launch) as runner:
        final = runner.wait_final(SPARK_DEADLINE)
        assert isinstance(final, FinishedEvent), runner.log()

    assert final.value == {
        "same": True,
        "same_jvm_app": True,
        "same_context": True,
        "master": SPARK_TEST_MASTER,
        "marker": "from-the-job",
    }
