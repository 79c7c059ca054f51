"""The failover-at-scale benchmark keeps working: a quick run adopts every job, restarts none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.zookeeper
def test_quick_run_adopts_every_simulated_attempt_and_prints_the_figures() -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/failover_scale.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout)
    (point,) = doc["results"]["points"]
    assert point["summary"]["adopted"] == str(point["jobs"])
    assert point["summary"]["restarted"] == "0"
    assert point["commands_after_kill"] == {}
    assert point["heartbeat"]["heartbeats"] > 0
    assert {row["figure"] for row in doc["summary"]} >= {
        "leader RSS, 50 jobs on 5 TaskManagers",
    }
