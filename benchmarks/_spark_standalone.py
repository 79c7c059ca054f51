"""Spark's standalone cluster with ZooKeeper recovery, started from the pyspark package's scripts.

The peer of :mod:`spark_peer`: two ``org.apache.spark.deploy.master.Master`` processes and one
``Worker``, all on loopback, launched with ``<pyspark>/bin/spark-class`` exactly as an operator
would, with the recovery configuration passed through ``SPARK_DAEMON_JAVA_OPTS``::

    spark.deploy.recoveryMode=ZOOKEEPER
    spark.deploy.zookeeper.url=<the managed ZooKeeper>
    spark.deploy.zookeeper.dir=/spark-<random>

Spark has no setting for its ZooKeeper session timeout: ``SparkCuratorUtil`` hard-codes
60000 ms (checked in the spark-core 4.3.0 jar's bytecode and Spark's source), and the
ZooKeeper server grants ``min(60000, maxSessionTimeout)``. The only way an operator can
shorten it is the server's ``maxSessionTimeout``, which :func:`zookeeper_capped` sets.

Each master's web UI answers ``GET /json/`` with its ``status`` (ALIVE, STANDBY,
RECOVERING, COMPLETING_RECOVERY) and its ``activeapps``: the benchmark polls that.

How a Spark daemon is launched (its command, environment, ports) comes from the testing kit
:mod:`steward.testing.spark`, which the tests' standalone cluster uses too; this module adds
the ZooKeeper recovery, the second master and the peer's applications.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    PeerProcess,
    TempZooKeeper,
    http_json,
    progress,
    temp_zookeeper,
    wait_until,
)
from steward.testing.ports import free_port
from steward.testing.spark import (
    LOOPBACK,
    master_command,
    spark_env,
    spark_home,
    spark_version,
    worker_command,
)
from steward.testing.spawning import spawn_logged
from steward.zookeeper import layout

__all__ = ["free_port", "spark_home", "spark_version"]  # imported from here by other benchmarks

Json = dict[str, Any]
SPARK_ZK_SESSION_MS = 60000
"""What Spark's curator asks ZooKeeper for (hard-coded in SparkCuratorUtil)."""


@contextmanager
def zookeeper_capped(name: str, max_session_ms: int | None) -> Iterator[TempZooKeeper]:
    """A managed ZooKeeper whose ``maxSessionTimeout`` is ``max_session_ms`` (None: Steward's
    managed default, 120 s, which grants Spark its full 60 s).

    The managed ensemble writes zoo.cfg from ``layout.SERVER_SETTINGS`` when it starts; the
    override lives only in this process and only while the server starts.
    """
    saved = dict(layout.SERVER_SETTINGS)
    if max_session_ms is not None:
        layout.SERVER_SETTINGS["maxSessionTimeout"] = str(max_session_ms)
    try:
        with temp_zookeeper(name) as zookeeper:
            layout.SERVER_SETTINGS.clear()
            layout.SERVER_SETTINGS.update(saved)
            yield zookeeper
    finally:
        layout.SERVER_SETTINGS.clear()
        layout.SERVER_SETTINGS.update(saved)


@dataclass
class Daemon(PeerProcess):
    """One Spark JVM (master, worker or application driver) in its own process group."""

    port: int = 0
    webui_port: int = 0

    def status(self) -> Json | None:
        value = http_json(f"http://{LOOPBACK}:{self.webui_port}/json/")
        return value if isinstance(value, dict) else None


# A long-running application: a tiny Spark job every 200 ms; each completed one appends a line
# "<monotonic> <count>" to TICKS, so the benchmark sees whether it kept going.
LONG_APP = textwrap.dedent(
    """
    import sys, time
    from pyspark.sql import SparkSession

    master, ticks, app_id_file = sys.argv[1], sys.argv[2], sys.argv[3]
    spark = (
        SparkSession.builder.master(master).appName("steward-bench-long")
        .config("spark.cores.max", "1").config("spark.executor.memory", "512m")
        .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").getOrCreate()
    )
    with open(app_id_file + ".tmp", "w") as out:
        out.write(spark.sparkContext.applicationId)
    import os
    os.replace(app_id_file + ".tmp", app_id_file)
    n = 0
    while True:
        spark.range(100).count()
        n += 1
        with open(ticks, "a") as out:
            out.write(f"{time.monotonic()} {n}\\n")
        time.sleep(0.2)
    """
)

TRIVIAL_APP = textwrap.dedent(
    """
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("steward-bench-trivial").getOrCreate()
    assert spark.range(10).count() == 10
    spark.stop()
    """
)


@dataclass
class SparkStandalone:
    """Two masters with ZooKeeper recovery and one worker, in ``workdir``."""

    workdir: Path
    zookeeper_url: str
    worker_cores: int = 2
    worker_memory: str = "2g"
    masters: list[Daemon] = field(default_factory=list)
    workers: list[Daemon] = field(default_factory=list)
    apps: list[Daemon] = field(default_factory=list)
    zk_dir: str = field(default_factory=lambda: f"/spark-{random.randrange(16**8):08x}")

    # ------------------------------------------------------------------ environment

    def _env(self) -> dict[str, str]:
        recovery = (
            "-Dspark.deploy.recoveryMode=ZOOKEEPER"
            f" -Dspark.deploy.zookeeper.url={self.zookeeper_url}"
            f" -Dspark.deploy.zookeeper.dir={self.zk_dir}"
        )
        return spark_env(self.workdir, daemon_java_opts=recovery)

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = self.workdir / "logs" / f"{name}.log"
        return spawn_logged(argv, log, cwd=self.workdir, env=self._env())

    @property
    def master_url(self) -> str:
        """``spark://host:p1,host:p2``: the HA URL applications and workers use."""
        return "spark://" + ",".join(f"{LOOPBACK}:{m.port}" for m in self.masters)

    # ------------------------------------------------------------------ daemons

    def start_master(self, name: str, port: int = 0, webui: int = 0) -> Daemon:
        """Start a master (on fresh ports unless given: a replacement keeps the URL valid)."""
        port, webui = port or free_port(), webui or free_port()
        argv = master_command(port, webui)
        daemon = Daemon(name, self._spawn(name, argv), self.workdir / "logs" / f"{name}.log")
        daemon.port, daemon.webui_port = port, webui
        self.masters.append(daemon)
        return daemon

    def start_worker(self, name: str = "worker") -> Daemon:
        webui = free_port()
        argv = worker_command(
            self.master_url,
            webui_port=webui,
            cores=self.worker_cores,
            memory=self.worker_memory,
            work_dir=self.workdir / "worker",
        )
        daemon = Daemon(name, self._spawn(name, argv), self.workdir / "logs" / f"{name}.log")
        daemon.webui_port = webui
        self.workers.append(daemon)
        return daemon

    def start_long_app(self, name: str) -> tuple[Daemon, Path, Path]:
        """The long-running application (client mode): its daemon, ticks file, app-id file."""
        script = self.workdir / "long_app.py"
        script.write_text(LONG_APP)
        ticks = self.workdir / f"{name}.ticks"
        app_id = self.workdir / f"{name}.appid"
        argv = [sys.executable, str(script), self.master_url, str(ticks), str(app_id)]
        daemon = Daemon(name, self._spawn(name, argv), self.workdir / "logs" / f"{name}.log")
        self.apps.append(daemon)
        return daemon, ticks, app_id

    def submit_trivial(self, name: str, timeout: float) -> float:
        """Wall seconds of ``spark-submit --master <HA URL> trivial.py`` to its exit (0)."""
        script = self.workdir / "trivial_app.py"
        script.write_text(TRIVIAL_APP)
        argv = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            self.master_url,
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.ui.showConsoleProgress=false",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.cores.max=1",
            str(script),
        ]
        started = time.perf_counter()
        popen = self._spawn(name, argv)
        try:
            code = popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait(10)
            raise
        elapsed = time.perf_counter() - started
        if code != 0:
            log = (self.workdir / "logs" / f"{name}.log").read_text(errors="replace")
            raise RuntimeError(f"spark-submit exited with {code}:\n{log[-3000:]}")
        return elapsed

    def replace_master(self, old: Daemon) -> Daemon:
        """Start a new master on ``old``'s ports in ``old``'s place (``old`` must be dead)."""
        old.popen.wait(60)
        index = self.masters.index(old)
        self.masters.remove(old)
        new = self.start_master(f"{old.name}+", old.port, old.webui_port)
        self.masters.remove(new)
        self.masters.insert(index, new)
        return new

    # ------------------------------------------------------------------ queries

    def alive_master(self) -> Daemon | None:
        for master in self.masters:
            if master.alive():
                status = master.status()
                if status is not None and status.get("status") == "ALIVE":
                    return master
        return None

    def wait_alive_master(self, timeout: float) -> Daemon:
        return wait_until(self.alive_master, timeout, "a Spark master ALIVE", interval=0.1)

    def wait_worker_registered(self, master: Daemon, timeout: float) -> None:
        def registered() -> bool:
            status = master.status() or {}
            return any(w.get("state") == "ALIVE" for w in status.get("workers", []))

        wait_until(registered, timeout, "the worker registered", interval=0.1)

    def check_alive(self) -> None:
        for daemon in [*self.masters, *self.workers, *self.apps]:
            if not daemon.alive() and daemon.popen.returncode not in (-9, -15, 143, 137):
                raise RuntimeError(
                    f"{daemon.name} exited with {daemon.popen.returncode}:\n{daemon.log_tail()}"
                )

    def stop(self) -> None:
        """SIGKILL every process group started (apps first, masters last)."""
        for daemon in [*self.apps, *self.workers, *self.masters]:
            daemon.kill_group()
        progress("Spark standalone processes stopped")


def read_ticks(path: Path) -> list[tuple[float, int]]:
    """The long app's completed jobs: (monotonic time, n)."""
    if not path.exists():
        return []
    ticks = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            ticks.append((float(parts[0]), int(parts[1])))
    return ticks
