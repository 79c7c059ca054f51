"""The runner's side of a job's files: links, sys.path, PYSPARK_PYTHON and Spark's settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.runtime.dependencies import PY_FILES_DIR, prepare, spark_settings
from steward.wire.jobs import DependencyKind, JobSpec
from steward.wire.runner_protocol import LaunchDocument, LocalDependency


@pytest.fixture(autouse=True)
def restore_process_state() -> Iterator[None]:
    path, environ = list(sys.path), dict(os.environ)
    yield
    sys.path[:] = path
    os.environ.clear()
    os.environ.update(environ)


def local(
    kind: DependencyKind, path: Path, link_name: str, packed: Path | None = None
) -> LocalDependency:
    return LocalDependency(
        kind=kind, path=str(path), link_name=link_name, packed=str(packed) if packed else None
    )


def launch(tmp_path: Path, dependencies: list[LocalDependency], **spec: object) -> LaunchDocument:
    return LaunchDocument(
        job_id="j",
        attempt=1,
        epoch=1,
        spec=JobSpec(job_id="j", **spec),  # type: ignore[arg-type]
        artifact_path=str(tmp_path / "job.py"),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        deadman_timeout=10.0,
        dependencies=dependencies,
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    (root / "helpers").mkdir(parents=True)
    (root / "helpers" / "helper_mod.py").write_text("VALUE = 'helped'\n")
    (root / "lib.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (root / "data.csv").write_text("a\n")
    (root / "env" / "bin").mkdir(parents=True)
    (root / "env.tar.gz").write_bytes(b"")
    (root / "extra.jar").write_bytes(b"")
    return root


def test_files_are_linked_py_files_importable_and_spark_told(tmp_path: Path, cache: Path) -> None:
    workdir = tmp_path / "attempt"
    workdir.mkdir()
    document = launch(
        tmp_path,
        [
            local(DependencyKind.PY_FILE, cache / "helpers" / "helper_mod.py", "helper_mod.py"),
            local(DependencyKind.PY_FILE, cache / "lib.zip", "lib.zip"),
            local(DependencyKind.FILE, cache / "data.csv", "data.csv"),
            local(DependencyKind.ARCHIVE, cache / "env", "environment", cache / "env.tar.gz"),
            local(DependencyKind.JAR, cache / "extra.jar", "extra.jar"),
        ],
        spark_conf={"spark.jars": "/opt/user.jar"},
    )
    settings = prepare(document, workdir)
    assert (workdir / "data.csv").read_text() == "a\n"
    assert (workdir / "environment").resolve() == (cache / "env").resolve()
    assert not (workdir / "extra.jar").exists()
    assert str(workdir / PY_FILES_DIR) in sys.path and str(cache / "lib.zip") in sys.path
    assert str(workdir) not in sys.path
    import helper_mod  # type: ignore[import-not-found]

    assert helper_mod.VALUE == "helped"
    assert settings == {
        "spark.submit.pyFiles": f"{cache / 'helpers' / 'helper_mod.py'},{cache / 'lib.zip'}",
        "spark.files": str(cache / "data.csv"),
        "spark.archives": f"{cache / 'env.tar.gz'}#environment",
        "spark.jars": f"/opt/user.jar,{cache / 'extra.jar'}",
    }
    assert prepare(document, workdir) == settings  # idempotent


def test_a_requirements_environment_comes_first_and_runs_the_python_workers(
    tmp_path: Path,
) -> None:
    env = tmp_path / "venv"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = env / "lib" / version / "site-packages"
    packages.mkdir(parents=True)
    (packages / "json.py").write_text("SHADOW = True\n")  # proves the order, not imported
    document = launch(tmp_path, []).model_copy(update={"python_env": str(env)})
    workdir = tmp_path / "attempt"
    workdir.mkdir()
    settings = prepare(document, workdir)
    assert sys.path[0] == str(packages)
    assert settings == {"spark.pyspark.python": str(env / "bin" / "python")}
    assert os.environ["PYSPARK_PYTHON"] == str(env / "bin" / "python")


def test_a_python_the_job_names_is_kept_and_exported(tmp_path: Path, cache: Path) -> None:
    document = launch(
        tmp_path,
        [local(DependencyKind.ARCHIVE, cache / "env", "environment", cache / "env.tar.gz")],
        spark_conf={"spark.pyspark.python": "./environment/bin/python"},
    ).model_copy(update={"python_env": str(cache / "env")})
    workdir = tmp_path / "attempt"
    workdir.mkdir()
    settings = prepare(document, workdir)
    assert "spark.pyspark.python" not in settings
    assert os.environ["PYSPARK_PYTHON"] == "./environment/bin/python"
    assert spark_settings(document)["spark.archives"] == f"{cache / 'env.tar.gz'}#environment"
