"""``log.format = json`` with real processes: a JobManager, a TaskManager and an attempt's
runner each write one JSON object per line, naming the job, the attempt and the epoch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steward.testing.processes import ProcessCluster
from steward.wire.states import TerminalState
from steward.zookeeper.managed import ManagedEnsemble

pytestmark = pytest.mark.zookeeper

PIPELINE = """
import logging

def main(ctx):
    print("a plain line from the pipeline")
    logging.getLogger("pipeline").info("a record from the pipeline")
    return 7
"""


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of ``path`` as JSON (a line that is not fails the test, naming it)."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            found.append(json.loads(line))
        except ValueError:
            pytest.fail(f"{path.name}:{number} is not JSON: {line!r}")
    return found


def test_every_process_logs_json_lines_naming_job_attempt_and_epoch(
    tmp_path: Path, zookeeper: ManagedEnsemble
) -> None:
    cluster = ProcessCluster(
        tmp_path,
        zookeeper.connect_string,
        f"t-json-logs-{tmp_path.name[-6:]}",
        extra={"log.format": "json"},
    )
    try:
        jobmanager = cluster.start_jobmanager("jm-1")
        taskmanager = cluster.start_taskmanager("tm-1", slots=1)
        cluster.wait_ready(taskmanagers=1)
        pipeline = tmp_path / "logs_a_little.py"
        pipeline.write_text(PIPELINE)
        with cluster.client() as client:
            client.submit(pipeline, job_id="json-logged")
            assert client.wait("json-logged", timeout=60).state is TerminalState.FINISHED
    finally:
        cluster.stop()

    leader = json_lines(jobmanager.log)
    assert {r["process"] for r in leader} == {"jobmanager:jm-1"}
    terminated = [r for r in leader if r["message"].startswith("job terminated")]
    assert [(r["job"], r["epoch"]) for r in terminated] == [("json-logged", 1)]

    worker = json_lines(taskmanager.log)
    assert {r["process"] for r in worker} == {"taskmanager:tm-1"}
    assert any(r.get("job") == "json-logged" and r.get("attempt") == 1 for r in worker)

    (attempt_log,) = tmp_path.glob("**/json-logged*/**/runner.log") or tmp_path.glob(
        "**/runner.log"
    )
    lines = attempt_log.read_text().splitlines()
    assert "a plain line from the pipeline" in lines  # the pipeline's own output, as printed
    runner = [json.loads(line) for line in lines if line.startswith("{")]
    assert runner and all(
        (r["process"], r["job"], r["attempt"]) == ("runner", "json-logged", 1) for r in runner
    )
    assert any(r["message"] == "a record from the pipeline" for r in runner)
