"""A job's own Python environment through a real cluster (JobManager and TaskManager processes).

The package the job uses is not in Steward's environment: a tiny wheel this test writes, named
by absolute path in ``requirements`` (built into a venv by the TaskManager), or installed in a
packed venv shipped with ``--archives env.tar.gz#environment`` and
``spark.pyspark.python=./environment/bin/python``. The driver imports it, and so does a UDF on
the executors' Python workers.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from steward.testing.processes import ProcessCluster
from tiny_wheel import build_wheel

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

SPARK_DEADLINE = 240.0

PIPELINE = """
import sys

from pyspark.sql.functions import udf


def main(ctx):
    import stw_env_dep

    spark = ctx.spark  # built first: a UDF's return type needs the session

    @udf("string")
    def scaled(value):
        import sys

        import stw_env_dep

        return f"{stw_env_dep.scale(value)}|{sys.prefix}"

    rows = spark.range(4).select(scaled("id").alias("s")).collect()
    return {"driver": stw_env_dep.scale(1), "executors": sorted(r.s for r in rows)}
"""


def write_pipeline(tmp_path: Path) -> Path:
    pipeline = tmp_path / "stw_env_pipeline.py"
    pipeline.write_text(PIPELINE)
    return pipeline


# Slow: the same proof runs in the default suite at the runner's level
# (tests/e2e/runtime/test_dependencies_spark.py); this one adds the cluster around it.
@pytest.mark.slow
def test_requirements_reach_the_driver_and_the_executors(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    wheel = build_wheel(tmp_path / "wheels", "stw_env_dep", "def scale(x):\n    return x * 3\n")
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    with process_cluster.client() as client:
        client.submit(
            write_pipeline(tmp_path),
            job_id="env-req",
            requirements=[str(wheel)],
            restart={"kind": "none"},
        )
        result = client.wait("env-req", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    assert result.value["driver"] == 3
    values = sorted(int(entry.split("|")[0]) for entry in result.value["executors"])
    assert values == [0, 3, 6, 9]
    prefixes = {entry.split("|")[1] for entry in result.value["executors"]}
    assert len(prefixes) == 1 and "/.cache/envs/" in prefixes.pop()  # the job's venv ran them
    process_cluster.check_alive()


def test_an_environment_that_cannot_be_built_fails_the_job_at_once(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    missing = tmp_path / "stw_nowhere-0.1-py3-none-any.whl"
    with process_cluster.client() as client:
        client.submit(
            write_pipeline(tmp_path),
            job_id="env-bad",
            requirements=[str(missing)],
            restart={"kind": "fixed-delay", "attempts": 5, "delay": 1.0},
        )
        result = client.wait("env-bad", timeout=SPARK_DEADLINE)
        view = client.job("env-bad")
    assert result.state.value == "FAILED"
    assert result.error is not None and "pip install exited" in result.error.message
    assert "stw_nowhere" in result.error.message and result.error.permanent
    assert view.attempt_count == 1  # permanent: no restart spent


def packed_environment(tmp_path: Path) -> Path:
    """A venv with the tiny wheel installed, packed as venv-pack would (links kept)."""
    wheel = build_wheel(tmp_path / "wheels", "stw_env_dep", "def scale(x):\n    return x * 5\n")
    venv = tmp_path / "packed-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-input"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    # A real packed environment has PySpark installed; this one borrows the test's.
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = sysconfig.get_paths()["purelib"]
    (venv / "lib" / version / "site-packages" / "zz_base.pth").write_text(
        f"import site; site.addsitedir({base!r})\n"
    )
    archive = tmp_path / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(venv, arcname=".")
    return archive


@pytest.mark.slow
def test_a_packed_environment_reaches_the_driver_and_the_executors(
    process_cluster: ProcessCluster, tmp_path: Path
) -> None:
    archive = packed_environment(tmp_path)
    process_cluster.start_jobmanager("jm-1")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    with process_cluster.client() as client:
        client.submit(
            write_pipeline(tmp_path),
            job_id="env-packed",
            archives=[f"{archive}#environment"],
            spark_conf={"spark.pyspark.python": "./environment/bin/python"},
            restart={"kind": "none"},
        )
        result = client.wait("env-packed", timeout=SPARK_DEADLINE)
    assert result.state.value == "FINISHED", result.error
    assert result.value["driver"] == 5
    values = sorted(int(entry.split("|")[0]) for entry in result.value["executors"])
    assert values == [0, 5, 10, 15]
