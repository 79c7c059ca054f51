"""benchmarks/script_submit.py keeps working: tiny runs of each part print their figures.

The archive part needs no Spark and takes seconds; the script part starts Spark twice (through
Steward and under spark-submit), which takes over a minute on a loaded machine: marked slow.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support import run_benchmark

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from script_submit import counts_in  # noqa: E402


def _run(*options: str, timeout: float) -> dict[str, Any]:
    return run_benchmark("script_submit.py", "--quick", *options, timeout=timeout)


def _row(doc: dict[str, Any], starts: str) -> dict[str, Any]:
    return next(row for row in doc["summary"] if row["figure"].startswith(starts))


def test_counts_are_read_from_the_scripts_output_around_log_lines() -> None:
    output = "INFO starting\nthe: 3\nand: 2\n26/11/23 WARN x: 1\nwords: 5, distinct: 2\nINFO end\n"
    assert counts_in(output) == {"words": 5, "distinct": 2, "top": [["the", 3], ["and", 2]]}
    assert counts_in("the: 3\n") is None


@pytest.mark.zookeeper
def test_archive_part_stores_the_archive_once_and_sends_it_once() -> None:
    doc = _run("--parts", "archives", "--archive-megabytes", "3", timeout=180)
    (round_,) = doc["results"]["archives"]
    assert round_["first"]["uploaded"] is True
    assert round_["second"]["uploaded"] is False
    assert _row(doc, "bytes the JobManager stored")["met"] is True
    assert all(row["steward"] is not None for row in doc["summary"])


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.zookeeper
def test_script_part_counts_the_same_through_steward_and_spark_submit() -> None:
    doc = _run("--parts", "scripts", "--megabytes", "1", timeout=600)
    runs = doc["results"]["scripts"]["runs"]
    assert {run["way"] for run in runs} == {"steward", "spark-submit"}
    assert len({json.dumps(run["result"], sort_keys=True) for run in runs}) == 1
    assert "counts agree: True" in _row(doc, "spark-submit script")["note"]
    assert doc["breakdown"]["steward"]["phases.attempt"] > 0
