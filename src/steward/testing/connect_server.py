"""A Spark Connect server for tests and benchmarks, started from the installed pyspark package.

::

    with connect_server(tmp_path / "connect") as server:
        submit(..., spark_conf={"spark.master": server.url})   # sc://127.0.0.1:<port>
        server.jobs(status="running")                            # its Spark UI's REST API

``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`` (the server's
jar, ``spark-connect_2.13-<version>.jar``, ships in ``pyspark/jars``) with its gRPC port and its
Spark UI on free loopback ports and its own Spark on ``local[N]``. :func:`connect_server`
returns once the server has accepted a real client session (which it then releases), and
SIGKILLs the server's process group on the way out, also after an error.

The Spark UI's REST API (``/api/v1/applications/<id>/jobs``) shows the server's Spark jobs with
their ``status`` and ``jobTags``; an operation of a Connect session runs its jobs under the tag
``SparkConnect_OperationTag_User_<user>_Session_<session id>_Operation_<operation id>``, so a
test can tell whose jobs run, and whether they were cancelled (``FAILED``, with a
"cancelled" ``failureReason``) or are still ``RUNNING``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from steward.testing.ports import free_port
from steward.testing.spark import (
    LOOPBACK,
    SparkProcess,
    http_json,
    spark_env,
    spark_home,
    spawn,
)
from steward.testing.waiting import wait_until

log = logging.getLogger(__name__)

_POLL = 0.1

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer:
    """A Spark Connect server under ``workdir`` whose own Spark runs on ``local[cores]``."""

    def __init__(self, workdir: Path, *, cores: int = 2, conf: Mapping[str, str] = {}) -> None:
        self.workdir = workdir
        self.cores = cores
        self.conf = dict(conf)
        self.port = free_port()
        self.ui_port = free_port()
        self.process: SparkProcess | None = None

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ui_port}"

    def command(self) -> list[str]:
        conf = {
            "spark.connect.grpc.binding.address": LOOPBACK,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.port": str(self.ui_port),
            "spark.port.maxRetries": "0",  # the UI on its port or not at all: tests read it
            "spark.driver.host": LOOPBACK,
            "spark.ui.showConsoleProgress": "false",
            **self.conf,
        }
        argv = [str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS]
        argv += ["--master", f"local[{self.cores}]", "--driver-memory", "512m"]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        return [*argv, "--name", "steward-test-connect-server", "spark-internal"]

    def start(self, timeout: float) -> ConnectServer:
        """Start the server; return once it has accepted (and released) a client session."""
        self.process = spawn(
            "connect-server", self.command(), self.workdir, spark_env(self.workdir)
        )
        wait_until(
            self._accepts_session, timeout, "the Spark Connect server accepted a session", _POLL
        )
        log.info("spark connect server ready url=%s ui=%s", self.url, self.ui_url)
        return self

    def _accepts_session(self) -> bool:
        self.check_alive()
        from pyspark.sql import SparkSession

        try:
            session = SparkSession.builder.remote(self.url).create()
        except Exception:
            return False
        try:
            return bool(session.range(1).count() == 1)
        except Exception:
            return False
        finally:
            session.stop()

    def application_id(self) -> str | None:
        apps = http_json(f"{self.ui_url}/api/v1/applications")
        if isinstance(apps, list) and apps:
            return str(apps[0]["id"])
        return None

    def jobs(self, status: str | None = None) -> list[Mapping[str, Any]]:
        """The server's Spark jobs (newest first), from its UI's REST API; [] while it does not
        answer. ``status``: running, succeeded, failed or unknown."""
        app_id = self.application_id()
        if app_id is None:
            return []
        query = f"?status={status}" if status else ""
        jobs = http_json(f"{self.ui_url}/api/v1/applications/{app_id}/jobs{query}")
        return list(jobs) if isinstance(jobs, list) else []

    def check_alive(self) -> None:
        if self.process is not None:
            self.process.check_alive()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            log.info("spark connect server stopped url=%s", self.url)


def jobs_of_session(jobs: list[Mapping[str, Any]], session_id: str) -> list[Mapping[str, Any]]:
    """The jobs among ``jobs`` that an operation of Connect session ``session_id`` started."""
    marker = f"_Session_{session_id}_"
    return [job for job in jobs if any(marker in tag for tag in job.get("jobTags", []))]


def job_time(value: str) -> float:
    """A time of the REST API (``2026-01-02T03:04:05.678GMT``) in epoch seconds."""
    parsed = datetime.strptime(value.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return parsed.timestamp()


@contextmanager
def connect_server(
    workdir: Path, *, cores: int = 2, conf: Mapping[str, str] = {}, timeout: float = 180.0
) -> Iterator[ConnectServer]:
    """A started :class:`ConnectServer`, killed for sure on the way out."""
    server = ConnectServer(workdir, cores=cores, conf=conf)
    try:
        yield server.start(timeout)
    finally:
        server.stop()
