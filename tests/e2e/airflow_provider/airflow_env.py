"""A real Airflow 3 for the provider's end-to-end tests, in a virtualenv of its own.

Airflow is far too heavy (and too pinned) to share Steward's venv, so the first test that
needs it builds one with uv from ``integrations/airflow/requirements-airflow.txt`` (every
package pinned: Airflow's constraint files are on GitHub, out of the tests' reach) under
``~/.cache/steward-tests/airflow-<sha256 of that file and the build version>``, with
bytecode, and migrates a SQLite metadata database there once, which each test copies into its
own ``AIRFLOW_HOME`` (built once behind a lock, as ``tests/cached_builds.py`` makes every such
tool). uv is taken from the PATH or
next to the running Python, else installed from PyPI into
``~/.cache/steward-tests/uv-<version>``.

The provider is installed into the venv (``--no-deps``, so its entry point is registered) once
per version of its pyproject.toml, and the tests also put this checkout's
``integrations/airflow/src`` first on ``PYTHONPATH``: each checkout runs its own provider code
whatever another one installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cached_builds import built_once, cache_root, locked

REPO = Path(__file__).resolve().parents[3]
PROVIDER = REPO / "integrations" / "airflow"
REQUIREMENTS = PROVIDER / "requirements-airflow.txt"
UV_VERSION = "0.13.8"
# Part of the cache key beside the requirements: a change to how the venv is built builds a new
# one. Version 2 installs with bytecode: where PYTHONDONTWRITEBYTECODE is set, each `airflow`
# command otherwise compiles Airflow's thousands of modules again.
BUILD_VERSION = b"\nbuild 2: bytecode\n"
BUILD_TIMEOUT = 1800.0


@dataclass(frozen=True)
class AirflowVenv:
    root: Path
    seconds: float
    """How long making it took in this session (building, or only checking it)."""

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def template_db(self) -> Path:
        return self.root / "template-home" / "airflow.db"


def airflow_venv() -> AirflowVenv:
    """The cached venv, built (and its template database migrated) if missing."""
    started = time.monotonic()
    root = built_once("airflow", REQUIREMENTS.read_bytes() + BUILD_VERSION, _build)
    with locked(root):
        _install_provider(root)
    return AirflowVenv(root, time.monotonic() - started)


def _build(root: Path) -> None:
    uv = find_uv()
    _run([uv, "venv", "-q", "--python", sys.executable, str(root)])
    _run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--compile-bytecode",
            "--python",
            str(root / "bin" / "python"),
            "-r",
            str(REQUIREMENTS),
        ]
    )
    home = root / "template-home"
    home.mkdir()
    _run([str(root / "bin" / "airflow"), "db", "migrate"], env=base_env(home))


def _install_provider(root: Path) -> None:
    """Install the provider's distribution (its entry point) once per version of its
    pyproject.toml: its code comes from ``PYTHONPATH`` anyway."""
    marker = (
        root
        / f".provider-{hashlib.sha256((PROVIDER / 'pyproject.toml').read_bytes()).hexdigest()[:16]}"
    )
    if marker.exists():
        return
    _run(
        [
            find_uv(),
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--reinstall-package",
            "steward-airflow-provider",
            "--python",
            str(root / "bin" / "python"),
            str(PROVIDER),
        ]
    )
    marker.touch()


def find_uv() -> str:
    for candidate in (shutil.which("uv"), str(Path(sys.executable).with_name("uv"))):
        if candidate and Path(candidate).is_file():
            return candidate
    bootstrap = cache_root() / f"uv-{UV_VERSION}"
    uv = bootstrap / "bin" / "uv"
    if not uv.is_file():
        _run([sys.executable, "-m", "venv", str(bootstrap)])
        _run([str(bootstrap / "bin" / "pip"), "install", "-q", f"uv=={UV_VERSION}"])
    return str(uv)


def base_env(home: Path) -> dict[str, str]:
    """The environment of an Airflow process with ``home`` as its AIRFLOW_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.pop("PYTHONPATH", None)
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home / 'airflow.db'}",
        PYTHONPATH=str(PROVIDER / "src"),
    )
    return env


def _run(argv: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
