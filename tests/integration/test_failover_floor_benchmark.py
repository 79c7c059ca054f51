"""benchmarks/failover_floor.py keeps working: a quick run (two crashes) prints its figures.

Real ZooKeeper, JobManagers and a TaskManager as processes; about 30 s on a quiet machine.
"""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_quick_floor_run_splits_each_crash_failover_into_its_phases() -> None:
    doc = run_benchmark("failover_floor.py", "--quick", "--jobs", "2", timeout=300)
    trials = doc["results"]["trials"]
    assert len(trials) == 2
    for trial in trials:
        # Every phase was found (the standby's crash detector acted: no session expiry) and
        # every attempt was adopted
        assert all(value is not None for value in trial["phases_s"].values()), trial
        assert trial["adopted"] == 2, trial
        assert trial["serves_s"] < doc["parameters"]["session_timeout_s"], trial
    assert doc["summary"][0]["steward"] is not None
