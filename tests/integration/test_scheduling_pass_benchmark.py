"""The scheduling-pass benchmark keeps working: a quick run prints its figures (issue 22)."""

from __future__ import annotations

from support import run_benchmark


def test_quick_scheduling_pass_run_measures_the_pass_before_and_after() -> None:
    # 1,000 running jobs on 100 simulated TaskManagers' slots and 100 waiting, in-process:
    # seconds. The benchmark itself fails if a pass changes a job or miscounts the slots.
    doc = run_benchmark("scheduling_pass.py", "--quick", timeout=240)
    results = doc["results"]
    assert (results["running"], results["waiting"], results["taskmanagers"]) == (1000, 100, 100)
    assert results["before_ms"] > 0 and results["after_ms"] > 0
    # Both medians are rounded to a microsecond: the ratio of the rounded ones is close.
    assert abs(results["ratio"] - results["after_ms"] / results["before_ms"]) < 0.01
    [row] = doc["summary"]
    assert row["unit"] == "ms CPU" and row["met"] in (True, False)
