"""benchmarks/content_gc.py keeps working: a quick run prints its figures, and a later round
with nothing changed reads no job graph (the figure that says a round costs what changed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.zookeeper
def test_a_quick_run_reads_only_the_graphs_that_changed() -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/content_gc.py", "--quick", "--jobs", "30"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    figures = doc["results"]["30"]
    assert figures["first_round"]["graphs_read"] == 30
    assert figures["later_rounds"]["graphs_read"] == [0, 0]
    assert figures["after_new_jobs"] == {**figures["after_new_jobs"], "graphs_read": 1}
    assert figures["full_check_round"]["graphs_read"] == 0
    assert figures["deleting_orphans"]["orphans"] == 5
    assert {row["figure"] for row in doc["summary"]} >= {"later / first round, 30 jobs"}
