"""benchmarks/failover_listing.py keeps working: a quick run (60 jobs on 2 slots, one crash)
lists every job through the new leader and prints its figures.

Real ZooKeeper, JobManagers and a TaskManager as processes; about 10 s on a quiet machine.
"""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_quick_listing_run_lists_every_queued_job_through_the_new_leader() -> None:
    doc = run_benchmark("failover_listing.py", "--quick", timeout=300)
    jobs = doc["parameters"]["jobs"]
    (trial,) = doc["results"]["trials"]
    # Every job listed by the standby that took over, none lost: 2 running, the rest waiting.
    assert trial["jobs_listed"] == jobs, trial
    assert trial["states"] == {"RUNNING": 2, "SCHEDULED": jobs - 2}, trial
    assert trial["new_leader"] == "jm-2", trial
    assert 0 < trial["serves_s"] <= trial["listed_s"], trial
    listed, alone = doc["summary"]
    assert listed["steward"] == pytest.approx(trial["listed_s"], abs=1e-3)
    assert listed["goal"] == "< 2 s"
    assert alone["steward"] is not None and alone["steward"] > 0
