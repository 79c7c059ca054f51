"""Job environments built from requirements: once per host, importable with Steward's own
packages behind them, and a build that fails is permanent with pip's words as the cause."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from steward.taskmanager.environments import EnvironmentBuildError, Environments
from steward.wire.jobs import DependencyKind, JobSpec
from steward.wire.runner_protocol import LocalDependency
from tiny_wheel import build_wheel


def test_requirements_build_one_venv_that_sees_the_job_and_steward(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheels", "stw_tiny_env", "ANSWER = 42\n")
    environments = Environments(tmp_path / "cache")
    built: list[Path] = []
    threads = [
        threading.Thread(target=lambda: built.append(environments.build([str(wheel)])))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 2 and built[0] == built[1]
    python = built[0] / "bin" / "python"
    probe = "import stw_tiny_env, steward, pyspark; print(stw_tiny_env.ANSWER)"
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "42"
    assert len(list((tmp_path / "cache" / "envs").iterdir())) == 1


def test_a_requirement_that_cannot_be_installed_is_a_permanent_error_with_pips_words(
    tmp_path: Path,
) -> None:
    environments = Environments(tmp_path / "cache")
    missing = tmp_path / "no-such-package-0.1-py3-none-any.whl"
    with pytest.raises(EnvironmentBuildError) as caught:
        environments.build([str(missing)])
    assert caught.value.permanent is True
    assert "pip install exited with code" in str(caught.value)
    assert "no-such-package" in str(caught.value)
    assert not any((tmp_path / "cache" / "envs").iterdir())


def test_spark_pyspark_python_into_an_archive_names_the_packed_environment(
    tmp_path: Path,
) -> None:
    spec = JobSpec(job_id="j", spark_conf={"spark.pyspark.python": "./environment/bin/python"})
    unpacked = LocalDependency(
        kind=DependencyKind.ARCHIVE,
        path=str(tmp_path / "unpacked"),
        link_name="environment",
        packed=str(tmp_path / "env.tar.gz"),
    )
    environments = Environments(tmp_path / "cache")
    assert environments.python_env(spec, [unpacked]) == str(tmp_path / "unpacked")
    assert environments.python_env(JobSpec(job_id="j"), [unpacked]) is None
    both = spec.model_copy(update={"requirements": ["six"]})
    with pytest.raises(EnvironmentBuildError, match="use one of them"):
        environments.python_env(both, [unpacked])
