"""benchmarks/zk_reads.py keeps working: a tiny run reads every znode three ways and prints the
CPU per read of each (the ways' answers are checked equal by the benchmark itself)."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_a_tiny_run_prints_the_cpu_per_read_of_each_way() -> None:
    doc = run_benchmark("zk_reads.py", "--znodes", "300", "--rounds", "1", timeout=240)

    assert doc["parameters"]["znodes"] == 300
    for way in ("get", "pipelined", "multiread"):
        assert doc["results"][way]["cpu_us_per_read"] > 0
    assert doc["results"]["multiread"]["ratio"] == 1.0
