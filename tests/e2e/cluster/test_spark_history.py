"""Spark history of a run: a real PySpark script through a real local cluster started with
``steward cluster start`` and its Spark History Server; the application is in the server's
REST API under the id Steward shows for the attempt, and the job view links it there."""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from e2e.cluster.cluster_cli import FAST, document, ok, steward
from e2e.cluster.test_local_cluster import nothing_runs
from steward.testing.ports import free_port
from support import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.spark]

HISTORY_DEADLINE = 90.0

SCRIPT = """
from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.getOrCreate()
    print("sum", spark.range(100).groupBy().sum("id").collect()[0][0])
    spark.stop()
"""


def applications(port: int) -> list[dict[str, Any]] | None:
    """The History Server's ``/api/v1/applications``, or None while it does not answer."""
    url = f"http://127.0.0.1:{port}/api/v1/applications"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            found: list[dict[str, Any]] = json.loads(response.read())
            return found
    except (OSError, ValueError, urllib.error.URLError):
        return None


@pytest.mark.slow  # 45-60 s idle, 190 s under load: cluster, Spark run, History Server; the default
# run has tests/unit/runtime/test_event_log.py
def test_a_finished_runs_application_is_in_the_history_server_under_stewards_app_id(
    workdir: Path,
) -> None:
    port = free_port()
    history = ("-D", "history.server.enabled=true", "-D", f"history.server.port={port}")
    # Given a local cluster started with its History Server
    ok(steward(workdir, *FAST, *history, "cluster", "start", "--jobmanagers", "1",
               "--taskmanagers", "1"))  # fmt: skip
    status = document(steward(workdir, "cluster", "status", "--json"))
    (server,) = [p for p in status["processes"] if p["role"] == "history-server"]
    assert server["alive"] is True and server["address"] == f"http://127.0.0.1:{port}"
    # When a plain PySpark script runs through it
    script = workdir / "sum_app.py"
    script.write_text(textwrap.dedent(SCRIPT))
    result = document(
        steward(workdir, "submit", "--json", "--master", "local[1]", "--driver-memory", "600m",
                "-c", "spark.ui.enabled=false", "-c", "spark.sql.shuffle.partitions=1",
                str(script), timeout=240)
    )  # fmt: skip
    assert result["state"] == "FINISHED", result
    # Then the attempt shows its application, linked in the History Server
    (attempt,) = document(steward(workdir, "status", result["job_id"], "--json"))["attempts"]
    app = attempt["spark_app"]
    assert app is not None
    app_id = app["app_id"]
    assert app["history_url"] == f"http://127.0.0.1:{port}/history/{app_id}"
    # And its event log was written into the HA storage's spark-events folder (Spark 4 rolls
    # event logs by default: a folder eventlog_v2_<app-id>)
    events = workdir / ".steward" / "storage" / "spark-events"
    assert [p.name for p in events.iterdir() if app_id in p.name], sorted(events.iterdir())
    # And the History Server lists it under that id, completed once its next scan sees the
    # ended run (a first scan may find it still in progress)
    wait_until(
        lambda: any(
            a["id"] == app_id and a["attempts"][-1]["completed"] for a in applications(port) or []
        ),
        HISTORY_DEADLINE,
        interval=1.0,
        message=f"application {app_id} completed in the History Server",
    )
    # When the cluster is stopped, the History Server is stopped with it
    ok(steward(workdir, "cluster", "stop"))
    assert nothing_runs(workdir)
    assert applications(port) is None
