"""Sample status records of a live job, shared by the record tests and
``benchmarks/record_decode.py``: one running job as a takeover finds it, and the changes that
give a record every field it can hold."""

from __future__ import annotations

from typing import Final

from steward.wire.records import AttemptRecord, ErrorInfo, JobStatusRecord, SparkApp
from steward.wire.states import AttemptState, JobState

NOW: Final = 1795807764.7889566

TAKEOVER_RECORD: Final = JobStatusRecord(
    job_id="etl-daily-1a2b3c4d5e6f",
    name="etl-daily",
    state=JobState.RUNNING,
    submitted_at=NOW,
    updated_at=NOW + 0.4,
    attempts=[
        AttemptRecord(
            number=1,
            taskmanager="tm-0042",
            epoch=1,
            state=AttemptState.RUNNING,
            started_at=NOW + 0.3,
            adopted_by=[2],
        )
    ],
    attempt_count=1,
    epoch=2,
    submitter="airflow",
    team="default",
    queue="default",
    priority=0,
    labels={"dag": "daily"},
    slots=1,
)
"""A running job's record as a takeover finds it: one running attempt, adopted once already,
the fields a submission sets."""


def with_every_field_set(record: JobStatusRecord) -> JobStatusRecord:
    """``record`` with every field off the common case: a restart pending, a failed attempt
    with its cause and Spark app, and None where a record usually holds a value."""
    failed = AttemptRecord(
        number=1,
        taskmanager="tm-1",
        epoch=1,
        state=AttemptState.FAILED,
        started_at=NOW,
        ended_at=NOW + 1,
        cause=ErrorInfo(type="E", message="m", traceback="t", permanent=True),
        adopted_by=[2, 3],
        spark_app=SparkApp(app_id="app-1", ui_url="http://x", master="local[*]"),
    )
    return record.model_copy(
        update={
            "name": "etl",
            "reason": "waiting for a slot",
            "state": JobState.RESTARTING,
            "restart_at": NOW + 5,
            "failures": 2,
            "proxy_user": "alice",
            "labels": {"team": "data"},
            "timeout": 60.0,
            "timed_out": True,
            "env": {"MODE": "x"},
            "max_concurrent": 2,
            "team": None,
            "queue": "etl",
            "priority": None,
            "slots": 4,
            "attempts": [failed],
        }
    )
