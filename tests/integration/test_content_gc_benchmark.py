"""benchmarks/content_gc.py keeps working: a quick run prints its figures, and a later round
with nothing changed reads no job graph (the figure that says a round costs what changed)."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_a_quick_run_reads_only_the_graphs_that_changed() -> None:
    doc = run_benchmark("content_gc.py", "--quick", "--jobs", "30", timeout=180)
    figures = doc["results"]["30"]
    assert figures["first_round"]["graphs_read"] == 30
    assert figures["later_rounds"]["graphs_read"] == [0, 0]
    assert figures["after_new_jobs"] == {**figures["after_new_jobs"], "graphs_read": 1}
    assert figures["full_check_round"]["graphs_read"] == 0
    assert figures["deleting_orphans"]["orphans"] == 5
    assert {row["figure"] for row in doc["summary"]} >= {"later / first round, 30 jobs"}
