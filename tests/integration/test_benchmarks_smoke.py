"""The benchmarks keep working: a quick run of all of them prints one JSON document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


# Slow (about 30 s): the cluster, peer and script benchmarks keep their own smoke tests in the
# default suite; this one runs the whole foundation suite at quick size.
@pytest.mark.slow
@pytest.mark.zookeeper
def test_quick_benchmark_run_prints_every_figure(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/run_all.py", "--quick", "--out-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    assert {"leader_failover", "fenced_writes", "job_graph_store"} <= set(figures["benchmarks"])
