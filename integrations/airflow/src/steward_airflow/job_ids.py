"""The job id of a task instance: the key that makes a retried task find its job.

Steward refuses a second job with an id it knows (same id and same submission: the same job;
another submission: 409). So an operator that names its job after the task instance
``(dag_id, task_id, run_id, map_index)`` gets, on a retry after its worker died, the job the
first try started, running or finished, never a second run. The id keeps the readable parts
(cut to fit Steward's 128 characters) and ends with a hash of the exact tuple: two task
instances whose names differ only in characters an id cannot hold, or beyond the cut, still
get two ids.
"""

from __future__ import annotations

import hashlib
import json
import re

MAX_JOB_ID = 128
_DIGEST_CHARS = 16
_NOT_IN_IDS = re.compile(r"[^A-Za-z0-9_.\-]+")
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
"""Steward's job-id rule (``steward.wire.values.JOB_ID_PATTERN``)."""


def task_job_id(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str:
    """``<dag>.<task>[.<map index>].<run>-<16 hex>``, valid under Steward's id rule."""
    exact = json.dumps([dag_id, task_id, run_id, map_index], separators=(",", ":"))
    digest = hashlib.sha256(exact.encode()).hexdigest()[:_DIGEST_CHARS]
    parts = [dag_id, task_id] + ([str(map_index)] if map_index >= 0 else []) + [run_id]
    readable = _NOT_IN_IDS.sub("-", ".".join(parts)).lstrip("-._")
    readable = readable[: MAX_JOB_ID - _DIGEST_CHARS - 1].rstrip("-._") or "airflow"
    return f"{readable}-{digest}"


def check_job_id(job_id: str) -> str:
    """``job_id`` if Steward accepts it; a ValueError naming the rule otherwise."""
    if not JOB_ID.fullmatch(job_id):
        raise ValueError(
            f"invalid Steward job id {job_id!r}: use 1-128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return job_id
