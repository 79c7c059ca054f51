"""The failover-at-scale benchmark keeps working: a quick run adopts every job, restarts none."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_quick_run_adopts_every_simulated_attempt_and_prints_the_figures() -> None:
    doc = run_benchmark("failover_scale.py", "--quick", timeout=300)
    (point,) = doc["results"]["points"]
    assert point["summary"]["adopted"] == str(point["jobs"])
    assert point["summary"]["restarted"] == "0"
    assert point["commands_after_kill"] == {}
    assert point["heartbeat"]["heartbeats"] > 0
    assert point["recovery_thread_cpu_ms_per_job"] > 0
    assert {row["figure"] for row in doc["summary"]} >= {
        "leader RSS, 50 jobs on 5 TaskManagers",
    }


# Slow (a second takeover of the quick run, 35 s when loaded): the default run has the crash
# case above, and a graceful handoff's recovery in
# tests/integration/jobmanager/test_jobmanager_recovery.py.
@pytest.mark.slow
@pytest.mark.zookeeper
def test_quick_graceful_handoff_adopts_every_simulated_attempt() -> None:
    doc = run_benchmark("failover_scale.py", "--quick", "--handoff", "term", timeout=300)
    (point,) = doc["results"]["points"]
    assert point["handoff"] == "term"
    assert point["summary"]["adopted"] == str(point["jobs"])
    assert point["commands_after_kill"] == {}
    assert any(row["figure"].startswith("graceful handoff (SIGTERM)") for row in doc["summary"])
