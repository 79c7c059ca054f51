"""The heartbeat-cost benchmark keeps working: a quick run's simulated TaskManagers are all
answered over bare HTTP, nothing is restarted, their idle heartbeats go unchanged, and the
leader's CPU per heartbeat is printed."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_quick_run_answers_every_simulated_taskmanager_and_prints_the_cpu_per_heartbeat() -> None:
    doc = run_benchmark("heartbeat_cost.py", "--quick", timeout=300)
    (point,) = doc["results"]["points"]
    assert point["running_in_simulator"] == point["jobs"]
    assert point["commands"] == {}
    assert point["heartbeat"]["heartbeats"] > 0
    # The leader used CPU in the window; what is left per heartbeat once its idle rate is
    # taken off can be 0 on a loaded machine (the idle windows then cost as much), never less.
    assert point["heartbeat"]["cpu_s"] > 0
    assert point["heartbeat"]["cpu_us_per_heartbeat"] >= 0
    # Idle: the leader keeps the reports, so the simulator leaves them out (unchanged).
    assert point["heartbeat"]["unchanged_sent"] > 0
    (row,) = doc["summary"]
    assert row["unit"] == "% of a core"
