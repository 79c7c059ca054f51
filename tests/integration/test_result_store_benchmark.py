"""The result store benchmark keeps working: a quick run prints its JSON document, and the
figure it exists for holds (ZooKeeper's own count of bytes per finished job under 200)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

pytestmark = pytest.mark.zookeeper


def test_quick_result_store_benchmark_prints_its_figures() -> None:
    run = subprocess.run(
        [sys.executable, "benchmarks/result_store.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads(run.stdout)
    (point,) = document["results"]["points"]
    assert point["results"] == 200
    assert point["zookeeper_bytes_per_job"] < 200
    assert point["legacy_zookeeper_bytes_per_job"] > 1000  # the whole entry, as before
    assert point["read_over_zookeeper_get"] > 0
    assert [row["figure"].split(",")[0] for row in document["summary"]] == [
        "ZooKeeper bytes per finished job",
        "result read (index + blob body) over a plain ZooKeeper get",
    ]
