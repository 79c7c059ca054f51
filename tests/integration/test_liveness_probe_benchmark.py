"""benchmarks/liveness_probe.py keeps working: a tiny run prints every figure it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.zookeeper
def test_a_tiny_run_times_exists_and_sync_through_the_leader_and_a_follower() -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/liveness_probe.py", "--quick", "--rounds", "20"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout)
    for role in ("leader", "follower"):
        for kind in ("exists", "sync"):
            assert doc["results"][role][kind]["median_ms"] > 0
    (row,) = doc["summary"]
    assert row["figure"].startswith("liveness probe round trip") and row["steward"] > 0
