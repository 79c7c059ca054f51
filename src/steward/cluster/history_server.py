"""The local cluster's Spark History Server: Spark's own, from the jars pyspark ships.

``steward cluster start`` runs ``<pyspark>/bin/spark-class
org.apache.spark.deploy.history.HistoryServer --properties-file
.steward/history-server.properties`` when ``history.server.enabled``, reading the folder the
TaskManagers' attempts write their event logs to (:mod:`steward.sparkconf.event_log`), and
records it in ``cluster.json`` like the other processes, so that ``steward cluster stop`` stops
exactly it. The properties file's path is the marker checked before a signal.

The server lists an application once its event log is in the folder; a run still going shows as
incomplete. It reads ``file://`` (and ``hdfs://``) folders as is; ``s3a://`` needs hadoop-aws,
which pyspark does not ship.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
from pathlib import Path

from steward.cluster import launcher
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir
from steward.config import Configuration
from steward.errors import LocalClusterError
from steward.sparkconf.event_log import ensure_folder, event_log_dir
from steward.supervisor.detached import spawn
from steward.zookeeper.layout import LOOPBACK, port_is_free

log = logging.getLogger(__name__)

HISTORY_SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"
PROPERTIES_FILE = "history-server.properties"
PROCESS_ID = "history-server"
UPDATE_INTERVAL = "5s"
"""How often it looks for new event logs (Spark's default is 10s): a run shows sooner."""


def spark_class() -> Path:
    """``<pyspark>/bin/spark-class``, without importing pyspark (it is slow to import)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise LocalClusterError("history.server.enabled needs pyspark installed (pip install)")
    return Path(spec.origin).parent / "bin" / "spark-class"


def properties(log_dir: str, port: int) -> str:
    """The server's Spark properties: the folder it reads, its port."""
    return (
        "# Written by `steward cluster start` for the local cluster's History Server.\n"
        f"spark.history.fs.logDirectory={log_dir}\n"
        f"spark.history.ui.port={port}\n"
        f"spark.history.fs.update.interval={UPDATE_INTERVAL}\n"
    )


def start(
    state_dir: StateDir, config: Configuration
) -> tuple[subprocess.Popen[bytes], ProcessEntry]:
    """Start the History Server of the configured event-log folder; returns its handle and
    record. Raises :class:`LocalClusterError` when it cannot run (no folder, port taken)."""
    settings = config.settings
    folder = event_log_dir(settings.history, settings.storage.storage_dir)
    if folder is None:
        raise LocalClusterError(
            "history.server.enabled needs Spark event logs: history.event-log.enabled=true and,"
            " for a storage that is not file://, history.event-log.dir"
        )
    port = settings.history.server_port
    if not port_is_free(port):
        raise LocalClusterError(
            f"history.server.port {port} is in use; `ss -ltnp 'sport = :{port}'` names the"
            " process, or choose another with -D history.server.port=PORT"
        )
    ensure_folder(folder)
    path = state_dir.root / PROPERTIES_FILE
    path.write_text(properties(folder, port), encoding="utf-8")
    argv = [str(spark_class()), HISTORY_SERVER_CLASS, "--properties-file", str(path)]
    child, record = spawn(argv, state_dir.logs / f"{PROCESS_ID}.log", marker=str(path))
    entry = ProcessEntry(
        role=Role.HISTORY_SERVER,
        id=PROCESS_ID,
        pid=record.pid,
        create_time=record.create_time,
        marker=record.marker,
        address=f"http://{LOOPBACK}:{port}",
        log=str(state_dir.logs / f"{PROCESS_ID}.log"),
    )
    log.info("history server started pid=%d port=%d dir=%s", record.pid, port, folder)
    return child, entry


def stop(state: ClusterState, *, timeout: float) -> list[ProcessEntry]:
    """Stop the recorded History Server if it is still ours; returns it if it ran."""
    return launcher.stop(state.of_role(Role.HISTORY_SERVER), timeout=timeout)


def running(state: ClusterState) -> list[str]:
    """``history-server (pid N)`` if the recorded one still runs, for "is running" errors."""
    entries = state.of_role(Role.HISTORY_SERVER)
    return [f"{e.id} (pid {e.pid})" for e in entries if launcher.live_process(e)]
