"""A job's Python environment: a venv built from its ``requirements``, or a packed archive.

Two ways, as PySpark's packaging guide describes:

- **requirements** (pip requirement lines): built once per host into
  ``<taskmanager.workdir>/.cache/envs/<hash>/`` with ``python -m venv`` and pip (the
  TaskManager's own, run for the venv's interpreter), keyed by the hash of the lines and of the
  TaskManager's interpreter; a marker file written last says the build is complete. After
  pip, a ``.pth`` file adds the TaskManager's site-packages *behind* the venv's, so the
  runner and PySpark's Python workers can run on the venv's interpreter and still import
  Steward and PySpark, while the job's own versions win;
- **a packed environment** (``--archives env.tar.gz#environment`` with ``spark.pyspark.python``
  = ``./environment/bin/python``): the archive's unpacked folder is the environment.

A build that fails is an :class:`EnvironmentBuildError` carrying pip's last lines: permanent,
since building the same lines again fails the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from steward.errors import StewardError
from steward.taskmanager.dependency_cache import file_lock
from steward.wire.jobs import DependencyKind, JobSpec
from steward.wire.runner_protocol import LocalDependency

log = logging.getLogger(__name__)

PYSPARK_PYTHON_CONF = "spark.pyspark.python"
BUILD_TIMEOUT = 1800.0
"""Seconds a venv build (pip included) may take."""
_COMPLETE = ".steward-complete"
_TAIL_LINES = 30
_TAIL_CHARS = 4000


class EnvironmentBuildError(StewardError):
    """The job's declared Python environment cannot be built or found (permanent)."""

    permanent = True


class Environments:
    """Builds and finds job environments under ``root`` (``<taskmanager.workdir>/.cache``)."""

    def __init__(
        self, root: Path, *, python: str = sys.executable, timeout: float = BUILD_TIMEOUT
    ) -> None:
        self.root = root
        self._python = python
        self._timeout = timeout

    def python_env(self, spec: JobSpec, dependencies: Sequence[LocalDependency]) -> str | None:
        """The job's environment prefix (for ``LaunchDocument.python_env``), or None."""
        packed = archive_environment(spec, dependencies)
        if packed is not None and spec.requirements:
            raise EnvironmentBuildError(
                f"the job names both requirements and a packed environment ({PYSPARK_PYTHON_CONF}"
                f" = {spec.spark_conf[PYSPARK_PYTHON_CONF]}); use one of them"
            )
        if packed is not None:
            return packed
        if spec.requirements:
            return str(self.build(spec.requirements))
        return None

    def build(self, requirements: Sequence[str]) -> Path:
        """The venv of these requirement lines, built now unless it already is."""
        final = self.root / "envs" / self._key(requirements)
        if (final / _COMPLETE).is_file():
            return final
        with file_lock(self.root / "locks" / f"env-{final.name}.lock"):
            if (final / _COMPLETE).is_file():
                return final
            if final.exists():  # an interrupted build
                shutil.rmtree(final)
            try:
                self._build(final, requirements)
            except BaseException:
                shutil.rmtree(final, ignore_errors=True)
                raise
        return final

    def _key(self, requirements: Sequence[str]) -> str:
        identity = json.dumps(
            {"python": self._python, "version": sys.version, "requirements": list(requirements)}
        )
        return hashlib.sha256(identity.encode()).hexdigest()[:32]

    def _build(self, env: Path, requirements: Sequence[str]) -> None:
        log.info("building environment env=%s requirements=%d", env, len(requirements))
        env.parent.mkdir(parents=True, exist_ok=True)
        self._run("python -m venv", [self._python, "-m", "venv", "--without-pip", str(env)])
        listing = env / "requirements.txt"
        listing.write_text("".join(f"{line}\n" for line in requirements))
        command = [self._python, "-m", "pip", "--python", str(env / "bin" / "python")]
        command += ["install", "--no-input", "--disable-pip-version-check"]
        self._run("pip install", [*command, "--no-warn-script-location", "-r", str(listing)])
        _add_base_site_packages(env)
        (env / _COMPLETE).write_text(listing.read_text())
        log.info("environment built env=%s", env)

    def _run(self, what: str, command: list[str]) -> None:
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self._timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise EnvironmentBuildError(
                f"the job's environment cannot be built: {what} took over {self._timeout:g}s"
            ) from None
        except OSError as exc:
            raise EnvironmentBuildError(f"the job's environment cannot be built: {exc}") from None
        if done.returncode != 0:
            raise EnvironmentBuildError(
                f"the job's environment cannot be built: {what} exited with code"
                f" {done.returncode}:\n{_tail(done.stdout + done.stderr)}"
            )


def archive_environment(spec: JobSpec, dependencies: Sequence[LocalDependency]) -> str | None:
    """The unpacked archive ``spark.pyspark.python`` points into (``./environment/bin/python``)."""
    python = spec.spark_conf.get(PYSPARK_PYTHON_CONF)
    if not python or PurePosixPath(python).is_absolute():
        return None
    parts = [part for part in PurePosixPath(python).parts if part != "."]
    for dependency in dependencies:
        if dependency.kind is DependencyKind.ARCHIVE and parts[:1] == [dependency.link_name]:
            return dependency.path
    return None


def site_packages(env: Path) -> Path:
    """The site-packages folder of a venv (or conda environment) for this Python version."""
    return (
        env / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )


def _add_base_site_packages(env: Path) -> None:
    """Let the venv's interpreter import what the TaskManager's can, behind its own packages."""
    folders = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    folders = [f for f in dict.fromkeys(folders) if Path(f).is_dir()]
    calls = "; ".join(f"site.addsitedir({folder!r})" for folder in folders)
    target = site_packages(env)
    target.mkdir(parents=True, exist_ok=True)
    # An "import" line of a .pth file runs at start-up; addsitedir also reads the base's own
    # .pth files (an editable install of Steward is one).
    (target / "zz_steward_base.pth").write_text(f"import site; {calls}\n")


def _tail(output: str) -> str:
    lines = output.strip().splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]
