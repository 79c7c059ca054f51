"""Spark processes for tests and benchmarks, started from the installed pyspark package.

What :mod:`steward.testing.standalone` (a standalone Master and Worker) and
:mod:`steward.testing.connect_server` (a Spark Connect server) share: where Spark is,
the environment (an empty ``SPARK_CONF_DIR`` of the caller's, so no
``spark-defaults.conf`` from elsewhere leaks in), and :class:`SparkProcess`: one JVM in its own
process group, its output in ``<workdir>/logs/<name>.log``, SIGKILLed as a group at the end.
The daemons are launched as an operator would, with ``<pyspark>/bin/spark-class`` and
``spark-submit``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steward.testing.spawning import spawn_logged

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
_KILL_WAIT = 10.0


def spark_home() -> Path:
    """The pyspark package directory: it holds bin/spark-class and jars/ (pip's layout)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def http_json(url: str, timeout: float = 2.0) -> Any:
    """The JSON at ``url``, or None if nothing answers with 200 (dead or still starting)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


# ---------------------------------------------------------------------------------- processes


@dataclass
class SparkProcess:
    """One Spark JVM in its own process group; Spark's launch scripts exec it, so the pid is
    the JVM's."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group and reap the process."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(_KILL_WAIT)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def check_alive(self) -> None:
        if not self.alive():
            raise RuntimeError(
                f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}"
            )


def spark_env(
    workdir: Path,
    *,
    daemon_java_opts: str = "",
    daemon_memory: str = "512m",
    host: str = LOOPBACK,
) -> dict[str, str]:
    """The environment of a Spark daemon or driver started from pyspark, confined to
    ``workdir`` (an empty ``conf`` folder there is its SPARK_CONF_DIR). The daemons' JVM
    options are ``daemon_java_opts``, else the caller's ``SPARK_DAEMON_JAVA_OPTS``."""
    conf_dir = workdir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": host,
        "SPARK_DAEMON_MEMORY": daemon_memory,
        "SPARK_DAEMON_JAVA_OPTS": daemon_java_opts or os.environ.get("SPARK_DAEMON_JAVA_OPTS", ""),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    for inherited in ("PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        env.pop(inherited, None)
    return env


def spawn(name: str, argv: list[str], workdir: Path, env: Mapping[str, str]) -> SparkProcess:
    """Start ``argv`` in its own process group, output appended to ``workdir/logs/<name>.log``."""
    path = workdir / "logs" / f"{name}.log"
    popen = spawn_logged(argv, path, cwd=workdir, env=env)
    log.info("spark process started name=%s pid=%d log=%s", name, popen.pid, path)
    return SparkProcess(name, popen, path)


def master_command(port: int, webui_port: int, host: str = LOOPBACK) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.master.Master",
        *("--host", host, "--port", str(port), "--webui-port", str(webui_port)),
    ]


def worker_command(
    master_url: str,
    *,
    webui_port: int,
    cores: int,
    memory: str,
    work_dir: Path,
    host: str = LOOPBACK,
) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.worker.Worker",
        *("--host", host, "--webui-port", str(webui_port)),
        *("--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir)),
        master_url,
    ]
