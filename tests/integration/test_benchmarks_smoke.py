"""The benchmarks keep working: a quick run of all of them prints one JSON document."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import run_benchmark


# Slow (about 30 s): the cluster, peer and script benchmarks keep their own smoke tests in the
# default suite; this one runs the whole foundation suite at quick size.
@pytest.mark.slow
@pytest.mark.zookeeper
def test_quick_benchmark_run_prints_every_figure(tmp_path: Path) -> None:
    figures = run_benchmark("run_all.py", "--quick", "--out-dir", str(tmp_path), timeout=240)
    assert {"leader_failover", "fenced_writes", "job_graph_store"} <= set(figures["benchmarks"])
