"""benchmarks/job_listing.py keeps working: a tiny run prints every figure it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.zookeeper
def test_a_tiny_run_pages_every_kind_and_streams_every_last_state() -> None:
    small = ["--jobs", "300", "--requests", "3", "--rate", "100", "--seconds", "0.5"]
    result = subprocess.run(
        [sys.executable, "benchmarks/job_listing.py", "--quick", *small, "--sse-jobs", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout)
    (size,) = doc["results"]["listing"]
    assert size["jobs"] == 300
    assert len(size["pages"]) == 6
    assert all(page["p50_ms"] > 0 for page in size["pages"].values())
    assert size["index_bytes_per_job"] > 0
    events = doc["results"]["events"]
    assert events["writes"] == 50
    assert events["last_state_seen_share"] == 1.0
    assert [row["figure"][:12] for row in doc["summary"]] == ["GET /v1/jobs", "SSE: every j"]
