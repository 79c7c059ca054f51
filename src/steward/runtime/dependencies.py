"""In the runner, before user code: make a job's files and environment what spark-submit makes.

:func:`prepare` takes the launch document (its ``dependencies`` are already on this host,
fetched and unpacked by the TaskManager) and, in the runner's working directory (the attempt's
folder):

- links every dependency but the jars under its ``link_name`` (an archive as its unpacked
  folder), as spark-submit's ``--files`` and ``--archives`` do for the driver;
- puts the py-files on ``sys.path`` (a .zip, .egg or .whl directly; a .py file through a
  folder of links, ``.steward-py-files/``, so the attempt's folder itself stays off the path);
- puts the job's Python environment's site-packages first on ``sys.path`` (so its versions of
  a package win over the TaskManager's);
- sets ``PYSPARK_PYTHON`` (the variable PySpark reads) to the effective
  ``spark.pyspark.python``, as spark-submit does, so the executors' Python workers run on the
  job's environment.

It returns the Spark settings spark-submit would add, for the caller to merge into the
session's conf. Nothing here imports pyspark or control-plane code.
"""

from __future__ import annotations

import logging
import os
import site
import sys
from collections.abc import Iterable
from pathlib import Path

from steward.wire.jobs import DependencyKind
from steward.wire.runner_protocol import LaunchDocument, LocalDependency

log = logging.getLogger(__name__)

PY_FILES_DIR = ".steward-py-files"
PYSPARK_PYTHON = "spark.pyspark.python"
_LIST_KEYS = {
    DependencyKind.PY_FILE: "spark.submit.pyFiles",
    DependencyKind.FILE: "spark.files",
    DependencyKind.ARCHIVE: "spark.archives",
    DependencyKind.JAR: "spark.jars",
}


def prepare(launch: LaunchDocument, workdir: Path | None = None) -> dict[str, str]:
    """Link, extend ``sys.path`` and ``PYSPARK_PYTHON``; return the Spark settings to merge.

    ``workdir`` defaults to the current directory. The returned dict holds only keys this
    job's files set (``spark.submit.pyFiles``, ``spark.files``, ``spark.archives``,
    ``spark.jars``: comma-separated, after what the job's ``spark_conf`` already lists;
    ``spark.pyspark.python``: the environment's interpreter when it was built from
    requirements and the job did not set one). Idempotent: a second call changes nothing.
    """
    folder = Path.cwd() if workdir is None else workdir
    for dependency in launch.dependencies:
        if dependency.kind is not DependencyKind.JAR:
            _link(folder / dependency.link_name, Path(dependency.path))
    _extend_sys_path(folder, launch.dependencies)
    if launch.python_env is not None:
        _add_environment(Path(launch.python_env))
    settings = spark_settings(launch)
    python = settings.get(PYSPARK_PYTHON) or launch.spec.spark_conf.get(PYSPARK_PYTHON)
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    log.info(
        "dependencies prepared job=%s files=%d python_env=%s",
        launch.job_id,
        len(launch.dependencies),
        launch.python_env,
    )
    return settings


def spark_settings(launch: LaunchDocument) -> dict[str, str]:
    """The Spark settings spark-submit would set for these dependencies (see :func:`prepare`)."""
    conf = launch.spec.spark_conf
    settings: dict[str, str] = {}
    for kind, key in _LIST_KEYS.items():
        ours = [_spark_path(d) for d in launch.dependencies if d.kind is kind]
        if ours:
            settings[key] = _merged(conf.get(key, ""), ours)
    if launch.python_env is not None and PYSPARK_PYTHON not in conf:
        # From requirements (an archive's environment is named by spark.pyspark.python itself).
        settings[PYSPARK_PYTHON] = str(Path(launch.python_env) / "bin" / "python")
    return settings


def _spark_path(dependency: LocalDependency) -> str:
    if dependency.kind is DependencyKind.ARCHIVE:
        return f"{dependency.packed or dependency.path}#{dependency.link_name}"
    return dependency.path


def _merged(existing: str, ours: Iterable[str]) -> str:
    items = [item.strip() for item in existing.split(",") if item.strip()]
    items += [item for item in ours if item not in items]
    return ",".join(items)


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.readlink() == target:
        return
    if link.is_symlink() or link.exists():
        # The job's own artifact folder may hold a file of that name: spark-submit would
        # overwrite it in the driver's folder too; say so rather than fail the attempt.
        log.warning("dependency replaces a file of the same name path=%s", link)
        if link.is_dir() and not link.is_symlink():
            return  # never delete a folder of the job's; the dependency stays unlinked
        link.unlink()
    link.symlink_to(target)


def _extend_sys_path(folder: Path, dependencies: Iterable[LocalDependency]) -> None:
    entries: list[str] = []
    for dependency in dependencies:
        if dependency.kind is not DependencyKind.PY_FILE:
            continue
        path = Path(dependency.path)
        if path.suffix == ".py":
            links = folder / PY_FILES_DIR
            links.mkdir(exist_ok=True)
            _link(links / path.name, path)
            entries.append(str(links))
        else:
            entries.append(str(path))
    for entry in reversed(list(dict.fromkeys(entries))):
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _add_environment(env: Path) -> None:
    """The environment's site-packages (and its .pth files), before everything else."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [env / "lib" / version / "site-packages", env / "lib" / "site-packages"]
    found = [c for c in candidates if c.is_dir()]
    if not found:
        others = sorted(str(p) for p in env.glob("lib/python*/site-packages"))
        log.warning(
            "job environment has no site-packages for %s env=%s found=%s", version, env, others
        )
        return
    before = list(sys.path)
    for folder in found:
        site.addsitedir(str(folder))
    added = [entry for entry in sys.path if entry not in before]
    sys.path[:] = added + before
