"""The micro-batch listener: one checkpoint per committed batch, none for idle triggers.

Uses pyspark's Python classes only; no JVM is started.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from steward.runtime.spark import MicroBatchListener, app_name

EXECUTED = {
    "addBatch": 120,
    "commitOffsets": 5,
    "getBatch": 1,
    "latestOffset": 2,
    "queryPlanning": 9,
    "triggerExecution": 150,
    "walCommit": 4,
}
IDLE = {"latestOffset": 2, "triggerExecution": 3}


def progress(batch: int, durations: dict[str, int], run: str = "run-1") -> Any:
    return SimpleNamespace(
        progress=SimpleNamespace(
            id="query-1",
            runId=run,
            name="wordcount",
            batchId=batch,
            numInputRows=10 * batch,
            timestamp=f"2026-01-01T00:00:0{batch}.000Z",
            durationMs=durations,
        )
    )


def test_each_executed_batch_is_reported_once_and_idle_triggers_not_at_all() -> None:
    reported: list[dict[str, Any]] = []
    listener = MicroBatchListener(reported.append)

    listener.onQueryProgress(progress(0, EXECUTED))
    listener.onQueryProgress(progress(1, IDLE))
    listener.onQueryProgress(progress(1, EXECUTED))
    listener.onQueryProgress(progress(1, EXECUTED))  # delivered twice
    listener.onQueryProgress(progress(0, EXECUTED))  # late, older

    assert reported == [
        {
            "kind": "micro-batch",
            "query_id": "query-1",
            "query_name": "wordcount",
            "run_id": "run-1",
            "batchId": batch,
            "numInputRows": 10 * batch,
            "timestamp": f"2026-01-01T00:00:0{batch}.000Z",
        }
        for batch in (0, 1)
    ]


def test_a_restarted_query_run_reports_its_batches_again() -> None:
    reported: list[dict[str, Any]] = []
    listener = MicroBatchListener(reported.append)

    listener.onQueryProgress(progress(2, EXECUTED, run="run-1"))
    listener.onQueryProgress(progress(2, EXECUTED, run="run-2"))

    assert [(r["run_id"], r["batchId"]) for r in reported] == [("run-1", 2), ("run-2", 2)]


def test_a_failing_callback_never_escapes_into_spark() -> None:
    def explode(metadata: dict[str, Any]) -> None:
        raise RuntimeError("pipe gone")

    MicroBatchListener(explode).onQueryProgress(progress(0, EXECUTED))


def test_the_app_name_names_job_and_attempt() -> None:
    assert app_name("nightly-etl", 3) == "steward-nightly-etl-3"
