"""benchmarks/liveness_probe.py keeps working: a tiny run prints every figure it promises."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_a_tiny_run_times_exists_and_sync_through_the_leader_and_a_follower() -> None:
    doc = run_benchmark("liveness_probe.py", "--quick", "--rounds", "20", timeout=240)
    for role in ("leader", "follower"):
        for kind in ("exists", "sync"):
            assert doc["results"][role][kind]["median_ms"] > 0
    (row,) = doc["summary"]
    assert row["figure"].startswith("liveness probe round trip") and row["steward"] > 0
