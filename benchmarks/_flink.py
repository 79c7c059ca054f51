"""Apache Flink's JobManager HA, assembled from the apache-flink wheels on PyPI and run here.

The peer of :mod:`flink_peer`. Flink is not installed: ``pip download --no-deps`` fetches the
``apache-flink`` and ``apache-flink-libraries`` wheels into ``~/.cache/steward-bench/
flink-<version>/`` and :func:`assemble_home` lays their ``pyflink/{bin,conf,lib,opt,plugins}``
out as a FLINK_HOME (the launch scripts come from the first wheel, the jars from the second).
No Python dependency of PyFlink is installed: the measured job is Java, run by the JVM alone.

:class:`FlinkHA` is two ``standalonesession`` JobManagers (``bin/jobmanager.sh
start-foreground``) and one TaskManager (``bin/taskmanager.sh start-foreground``) on loopback,
each a process group of its own with its output in the work directory, configured by one
``config.yaml`` (:func:`flink_config`): ``high-availability.type: zookeeper`` on the managed
ZooKeeper under a fresh root, the session timeout under test, checkpoints every second to a
local directory and a fixed-delay restart strategy.

The job (:data:`JOB_JAVA`, compiled here with ``javac`` against the distribution's jars and
submitted detached with ``bin/flink run -d``) generates 1, 2, 3... at a fixed rate with
Flink's ``DataGeneratorSource`` into the ``print`` sink, which writes ``steward-bench <n>``
lines to the TaskManager's stdout. The wheels ship no example jars, and ``bin/sql-client.sh``
cannot run from them: it needs the flink-sql-gateway jar, which neither wheel carries
(``NoClassDefFoundError: org/apache/flink/table/gateway/service/context/DefaultContext``).
The source's position is checkpointed state and stdout is not transactional, so a job
restored from a checkpoint prints again every number after that checkpoint: the duplicates
in the TaskManager's output are the records Flink replayed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import PeerProcess, http_json, progress, wait_until
from steward.testing.ports import stable_port
from steward.testing.spawning import spawn_logged

Json = dict[str, Any]
LOOPBACK = "127.0.0.1"
FLINK_VERSION = "2.3.0"
FLINK_DEFAULT_SESSION_MS = 60000
"""Flink's default ``high-availability.zookeeper.client.session-timeout`` (HighAvailabilityOptions
in flink-dist 2.3.0: a Duration, default 60000 ms)."""
CACHE = Path.home() / ".cache" / "steward-bench"
HOME_PARTS = ("bin", "conf", "lib", "opt", "plugins")
"""The FLINK_HOME folders, each ``pyflink/<part>/`` in one of the wheels."""
ROWS_PER_SECOND = 20
JOB_NAME = "steward-bench-flink"
JOB_CLASS = "StewardBenchJob"
JOB_JAVA = """
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Numbers 1, 2, 3... at a fixed rate to stdout, checkpointed, until cancelled. */
public final class StewardBenchJob {
    public static void main(String[] args) throws Exception {
        long rate = Long.parseLong(args[0]);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        GeneratorFunction<Long, String> line = index -> "steward-bench " + (index + 1);
        DataGeneratorSource<String> source = new DataGeneratorSource<>(
            line, Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.STRING);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "numbers")
            .setParallelism(1)
            .print()
            .setParallelism(1);
        env.execute("%s");
    }
}
""".replace("%s", JOB_NAME)
_PRINTED = re.compile(rb"^steward-bench (\d+)$", re.MULTILINE)
_REST_URL = re.compile(rb"https?://[\w.\-]+:(\d+)")


# ----------------------------------------------------------------------------- getting it


def wheel_names(directory: Path) -> tuple[Path, Path] | None:
    """The (apache-flink, apache-flink-libraries) wheels in ``directory``, if both are there."""
    scripts = sorted(directory.glob("apache_flink-*.whl"))
    libraries = sorted(directory.glob("apache_flink_libraries-*.whl"))
    return (scripts[0], libraries[0]) if scripts and libraries else None


def download_wheels(version: str, directory: Path) -> tuple[Path, Path]:
    """Both wheels of ``version`` in ``directory``, fetched with pip unless already there."""
    found = wheel_names(directory)
    if found is not None:
        return found
    directory.mkdir(parents=True, exist_ok=True)
    progress(f"downloading apache-flink {version} wheels (~330 MB) into {directory}")
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "--dest",
        str(directory),
        f"apache-flink=={version}",
        f"apache-flink-libraries=={version}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = wheel_names(directory)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"pip download failed ({done.returncode}): {done.stderr[-2000:]}")
    return found


def assemble_home(wheels: Iterable[Path], home: Path) -> Path:
    """Lay ``pyflink/{bin,conf,lib,opt,plugins}`` of ``wheels`` out under ``home``.

    Later wheels do not overwrite earlier files. Executable bits are kept (zip keeps them in
    the high bits of ``external_attr``; ``extractall`` drops them, and the scripts must run).
    A marker written last makes a second call a no-op, and an interrupted one start over.
    """
    marker = home / ".assembled"
    if marker.exists():
        return home
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                parts = info.filename.split("/")
                if len(parts) < 3 or parts[0] != "pyflink" or parts[1] not in HOME_PARTS:
                    continue
                target = home.joinpath(*parts[1:])
                if info.is_dir() or target.exists():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, target.open("wb") as out:
                    shutil.copyfileobj(source, out)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    target.chmod(mode)
    missing = [p for p in ("bin/jobmanager.sh", "bin/config.sh") if not (home / p).exists()]
    if not list((home / "lib").glob("flink-dist*.jar")):
        missing.append("lib/flink-dist-*.jar")
    if missing:
        raise RuntimeError(f"the wheels lack {', '.join(missing)}: not a Flink distribution")
    marker.write_text("complete\n")
    return home


def flink_home(version: str = FLINK_VERSION, cache: Path = CACHE) -> Path:
    """A FLINK_HOME of ``version``, downloaded and assembled once, reused after."""
    base = cache / f"flink-{version}"
    home = base / "home"
    if (home / ".assembled").exists():
        return home
    wheels = download_wheels(version, base / "wheels")
    progress(f"assembling FLINK_HOME in {home}")
    return assemble_home(wheels, home)


def java_opts_from_shipped(conf: Path) -> str:
    """``env.java.opts.all`` of the shipped config.yaml (the --add-opens Flink needs on 17)."""
    text = conf.read_text(encoding="utf-8") if conf.exists() else ""
    match = re.search(r"^\s+all:\s*(--.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


# ----------------------------------------------------------------------------- configuration


def flink_config(
    zookeeper: str,
    workdir: Path,
    session_ms: int | None,
    *,
    root: str,
    java_opts: str = "",
) -> dict[str, str]:
    """The config.yaml of the HA cluster, flat keys (Flink 2 reads dotted keys at top level).

    ``session_ms`` None leaves Flink's default session timeout (60 s) unset, as shipped.
    """
    settings = {
        "high-availability.type": "zookeeper",
        "high-availability.zookeeper.quorum": zookeeper,
        "high-availability.zookeeper.path.root": root,
        "high-availability.cluster-id": "/bench",
        "high-availability.storageDir": (workdir / "ha").as_uri(),
        "jobmanager.rpc.address": LOOPBACK,
        "jobmanager.bind-host": LOOPBACK,
        "rest.address": LOOPBACK,
        "rest.bind-address": LOOPBACK,
        "taskmanager.host": LOOPBACK,
        "taskmanager.bind-host": LOOPBACK,
        "jobmanager.memory.process.size": "768m",
        "taskmanager.memory.process.size": "1g",
        "taskmanager.memory.managed.size": "32m",
        "taskmanager.numberOfTaskSlots": "2",
        "parallelism.default": "1",
        "execution.checkpointing.interval": "1 s",
        "execution.checkpointing.dir": (workdir / "checkpoints").as_uri(),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1000",
        "restart-strategy.fixed-delay.delay": "1 s",
        "env.pid.dir": str(workdir / "pids"),
        "env.log.dir": str(workdir / "logs"),
    }
    if session_ms is not None:
        settings["high-availability.zookeeper.client.session-timeout"] = f"{session_ms} ms"
    if java_opts:
        settings["env.java.opts.all"] = java_opts
    return settings


def config_yaml(settings: dict[str, str]) -> str:
    """YAML text of ``settings``; values as JSON strings, which YAML reads verbatim."""
    lines = [f"{key}: {json.dumps(value)}" for key, value in settings.items()]
    return "# Written by benchmarks/_flink.py for one benchmark run.\n" + "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- processes


def rest_port_in(connection_info: bytes) -> int | None:
    """The port of the REST URL in a leader znode's data (Java-serialised: the URL is a
    modified-UTF-8 string inside, readable as bytes)."""
    match = _REST_URL.search(connection_info)
    return int(match.group(1)) if match else None


@dataclass
class FlinkProcess(PeerProcess):
    """One Flink JVM (JobManager or TaskManager) in its own process group (``jobmanager.sh``
    execs ``flink-console.sh``, which execs java)."""

    rest_port: int = 0

    @property
    def rest(self) -> str:
        return f"http://{LOOPBACK}:{self.rest_port}"

    def get(self, path: str, timeout: float = 1.0) -> Any:
        return http_json(self.rest + path, timeout)


@dataclass
class FlinkHA:
    """Two JobManagers with ZooKeeper HA and one TaskManager, in ``workdir``."""

    workdir: Path
    zookeeper: str
    session_ms: int | None
    home: Path = field(default_factory=flink_home)
    root: str = field(default_factory=lambda: f"/flink-{random.randrange(16**8):08x}")
    jobmanagers: list[FlinkProcess] = field(default_factory=list)
    taskmanagers: list[FlinkProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conf_dir = self.workdir / "conf"
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        for name in ("log4j-console.properties", "log4j-cli.properties", "logback-console.xml"):
            shutil.copy(self.home / "conf" / name, self.conf_dir / name)
        for sub in ("logs", "pids", "ha", "checkpoints"):
            (self.workdir / sub).mkdir(exist_ok=True)
        settings = flink_config(
            self.zookeeper,
            self.workdir,
            self.session_ms,
            root=self.root,
            java_opts=java_opts_from_shipped(self.home / "conf" / "config.yaml"),
        )
        (self.conf_dir / "config.yaml").write_text(config_yaml(settings), encoding="utf-8")

    def _env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "FLINK_CONF_DIR": str(self.conf_dir),
            "FLINK_LOG_DIR": str(self.workdir / "logs"),
            "FLINK_PID_DIR": str(self.workdir / "pids"),
        }
        for key in ("PYTHONPATH", "FLINK_HOME", "HADOOP_CLASSPATH"):
            env.pop(key, None)
        return env

    def _spawn(self, name: str, argv: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.workdir / "logs" / f"{name}.out"
        return spawn_logged(argv, log, cwd=self.workdir, env=self._env()), log

    def start_jobmanager(self, name: str, rest_port: int = 0) -> FlinkProcess:
        port = rest_port or stable_port()
        argv = [
            str(self.home / "bin" / "jobmanager.sh"),
            "start-foreground",
            "-D",
            f"rest.port={port}",
        ]
        popen, log = self._spawn(name, argv)
        process = FlinkProcess(name, popen, log, port)
        self.jobmanagers.append(process)
        return process

    def start_taskmanager(self, name: str = "tm") -> FlinkProcess:
        argv = [str(self.home / "bin" / "taskmanager.sh"), "start-foreground"]
        popen, log = self._spawn(name, argv)
        process = FlinkProcess(name, popen, log)
        self.taskmanagers.append(process)
        return process

    def replace_jobmanager(self, old: FlinkProcess) -> FlinkProcess:
        """A new JobManager on ``old``'s REST port in its place (``old`` must be dead)."""
        old.popen.wait(60)
        self.jobmanagers.remove(old)
        return self.start_jobmanager(f"{old.name}+", old.rest_port)

    def build_job(self) -> Path:
        """Compile :data:`JOB_JAVA` against the distribution's jars into ``job.jar``."""
        source_dir = self.workdir / "job" / "src"
        classes = self.workdir / "job" / "classes"
        source_dir.mkdir(parents=True, exist_ok=True)
        classes.mkdir(parents=True, exist_ok=True)
        java = source_dir / f"{JOB_CLASS}.java"
        java.write_text(JOB_JAVA, encoding="utf-8")
        jar = self.workdir / "job" / "job.jar"
        classpath = ":".join(str(p) for p in sorted((self.home / "lib").glob("*.jar")))
        for argv in (
            ["javac", "--release", "17", "-cp", classpath, "-d", str(classes), str(java)],
            ["jar", "cf", str(jar), "-C", str(classes), "."],
        ):
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
        return jar

    def submit_job(self, timeout: float) -> str:
        """Submit the job detached with ``bin/flink run -d``; its id, as the CLI prints it."""
        jar = self.build_job()
        argv = [
            str(self.home / "bin" / "flink"),
            "run",
            "-d",
            "-c",
            JOB_CLASS,
            str(jar),
            str(ROWS_PER_SECOND),
        ]
        popen, log = self._spawn("flink-run", argv)
        try:
            code = popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait(10)
            raise
        text = log.read_text(errors="replace")
        match = re.search(r"JobID ([0-9a-f]{32})", text)
        if code != 0 or match is None:
            raise RuntimeError(f"bin/flink run exited with {code}:\n{text[-3000:]}")
        return match.group(1)

    # ------------------------------------------------------------------ queries

    def leader_rest_port(self) -> int | None:
        """The REST port the ``rest_server`` leader znode names (None while leaderless)."""
        from kazoo.client import KazooClient
        from kazoo.exceptions import KazooException

        client = KazooClient(hosts=self.zookeeper, timeout=5.0)
        try:
            client.start(timeout=5.0)
            path = f"{self.root}/bench/leader/rest_server/connection_info"
            data, _ = client.get(path) if client.exists(path) else (b"", None)
        except (KazooException, OSError, TimeoutError):
            return None
        finally:
            with contextlib.suppress(Exception):
                client.stop()
                client.close()
        return rest_port_in(data or b"")

    def leader(self) -> FlinkProcess | None:
        port = self.leader_rest_port()
        return next((j for j in self.jobmanagers if j.rest_port == port and j.alive()), None)

    def wait_leader(self, timeout: float) -> FlinkProcess:
        return wait_until(self.leader, timeout, "a Flink leader", interval=0.2)

    def wait_rest(self, process: FlinkProcess, timeout: float) -> None:
        wait_until(
            lambda: process.get("/config") is not None,
            timeout,
            f"{process.name} REST up",
            interval=0.2,
        )

    def wait_taskmanager(self, timeout: float) -> None:
        def registered() -> bool:
            leader = self.leader()
            overview = leader.get("/overview") if leader else None
            return isinstance(overview, dict) and overview.get("taskmanagers", 0) >= 1

        wait_until(registered, timeout, "the TaskManager registered", interval=0.3)

    def printed(self) -> list[int]:
        """The numbers the job printed, in order, from the TaskManager's stdout."""
        numbers: list[int] = []
        for tm in self.taskmanagers:
            if tm.log.exists():
                numbers += [int(n) for n in _PRINTED.findall(tm.log.read_bytes())]
        return numbers

    def check_alive(self) -> None:
        for process in [*self.jobmanagers, *self.taskmanagers]:
            if not process.alive() and process.popen.returncode not in (-9, -15, 143, 137):
                raise RuntimeError(
                    f"{process.name} exited with {process.popen.returncode}:\n{process.log_tail()}"
                )

    def stop(self) -> None:
        """SIGKILL every process group started (TaskManagers first)."""
        for process in [*self.taskmanagers, *self.jobmanagers]:
            process.kill_group()
        progress("Flink processes stopped")


def flink_version_of(home: Path) -> str:
    """The version in the flink-dist jar's name (the wheels' version)."""
    jars = sorted((home / "lib").glob("flink-dist-*.jar"))
    return jars[0].name.removeprefix("flink-dist-").removesuffix(".jar") if jars else "unknown"
