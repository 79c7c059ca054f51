"""Fixtures of the Airflow tests: a real Airflow 3 in its own cached venv (:mod:`airflow_env`),
a fresh ``AIRFLOW_HOME`` per test (SQLite, the DAGs of ``dags/``), and a Steward cluster of
real processes (one JobManager, one TaskManager) that the ``steward_default`` and
``livy_default`` connections point at."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from e2e.airflow_provider.airflow_env import AirflowVenv, airflow_venv, base_env
from e2e.wordcounts import SAMPLE
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import ProcessCluster

HERE = Path(__file__).parent
# The provider's own modules that need no Airflow (its HTTP client, its event follower) are
# tested in Steward's venv too (test_provider_api.py).
PROVIDER_SOURCES = str(HERE.parents[2] / "integrations" / "airflow" / "src")
if PROVIDER_SOURCES not in sys.path:
    sys.path.insert(0, PROVIDER_SOURCES)


@pytest.fixture(scope="session")
def airflow() -> AirflowVenv:
    return airflow_venv()


@pytest.fixture
def jobs_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs"
    shutil.copytree(HERE / "jobs", folder)
    return folder


@pytest.fixture
def steward(
    tmp_path: Path, zk_quorum: str, cluster_id: str, jobs_dir: Path
) -> Iterator[ProcessCluster]:
    workdir = tmp_path / "steward"
    workdir.mkdir()
    extra = {"jobmanager.livy.allowed-sources": str(jobs_dir)}
    with ProcessCluster(workdir, zk_quorum, cluster_id, extra=extra) as cluster:
        cluster.start_one_of_each()
        yield cluster


@dataclass
class Airflow:
    """``airflow`` commands in one AIRFLOW_HOME, with the connections to one Steward cluster."""

    venv: AirflowVenv
    home: Path
    env: dict[str, str]
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(self, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv.bin / "airflow"), *args],
            check=False,
            env=self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """An ``airflow`` command in the background, its output in ``<home>/<name>.log``."""
        with (self.home / f"{name}.log").open("wb") as out:
            proc = subprocess.Popen(
                [str(self.venv.bin / "airflow"), *args],
                env=self.env,
                cwd=self.home,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(proc)
        return proc

    def log(self, name: str) -> str:
        path = self.home / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def task_logs(self, dag_id: str) -> dict[int, str]:
        """Each try's task log (by try number) of the DAG's task."""
        found = {}
        for path in (self.home / "logs").glob(f"dag_id={dag_id}/**/attempt=*.log"):
            found[int(path.stem.split("=")[1])] = path.read_text(errors="replace")
        return found

    def stop(self) -> None:
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(20)
            # Whatever is left of its group goes too: a LocalExecutor worker outlives its
            # parent's SIGTERM when the test failed mid-run.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture
def airflow_home(
    tmp_path: Path, airflow: AirflowVenv, steward: ProcessCluster, jobs_dir: Path
) -> Iterator[Airflow]:
    home = tmp_path / "airflow"
    shutil.copytree(HERE / "dags", home / "dags")
    shutil.copy(airflow.template_db, home / "airflow.db")
    address = steward.jobmanagers()[0].address
    env = base_env(home)
    env.update(
        AIRFLOW__API_AUTH__JWT_SECRET=secrets.token_hex(16),
        AIRFLOW__API__SECRET_KEY=secrets.token_hex(16),
        AIRFLOW_CONN_STEWARD_DEFAULT=json.dumps(
            {"conn_type": "steward", "host": address, "password": kit_admin_token()}
        ),
        AIRFLOW_CONN_LIVY_DEFAULT=json.dumps(
            {
                "conn_type": "livy",
                "host": urlsplit(address).hostname,
                "port": urlsplit(address).port,
                "schema": "http",
                "login": "airflow",
                "password": kit_admin_token(),
            }
        ),
        STEWARD_TEST_TEXT=str(SAMPLE),
        STEWARD_TEST_GATE=str(tmp_path / "gate"),
        STEWARD_TEST_PIPELINE=str(jobs_dir / "count_words.py"),
        STEWARD_TEST_SCRIPT=str(jobs_dir / "count_words_script.py"),
        STEWARD_TEST_OUTPUT=str(tmp_path / "livy-output.txt"),
    )
    runner = Airflow(airflow, home, env)
    try:
        yield runner
    finally:
        runner.stop()
