"""benchmarks/log_retention.py keeps working: a quick run prints its figures, an idle round
deletes nothing and one over its size budget deletes the oldest logs."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_a_quick_run_lists_and_deletes_the_oldest_past_the_budget() -> None:
    doc = run_benchmark("log_retention.py", "--quick", "--jobs", "20", timeout=180)
    figures = doc["results"]["20"]
    assert figures["logs"] == 60
    assert 0 < figures["deleting_round"]["deleted"] <= 8  # a tenth, give or take a bucket
    assert figures["idle_round_over_listing"] > 0
    assert {row["figure"] for row in doc["summary"]} >= {"retention round / bare listing, 60 logs"}
