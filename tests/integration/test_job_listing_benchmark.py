"""benchmarks/job_listing.py keeps working: a tiny run prints every figure it promises."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_a_tiny_run_pages_every_kind_and_streams_every_last_state() -> None:
    small = ["--jobs", "300", "--requests", "3", "--rate", "100", "--seconds", "0.5"]
    doc = run_benchmark("job_listing.py", "--quick", *small, "--sse-jobs", "5", timeout=240)
    (size,) = doc["results"]["listing"]
    assert size["jobs"] == 300
    assert len(size["pages"]) == 8
    assert all(page["p50_ms"] > 0 for page in size["pages"].values())
    assert size["index_bytes_per_job"] > 0
    events = doc["results"]["events"]
    assert events["writes"] == 50
    assert events["last_state_seen_share"] == 1.0
    assert [row["figure"][:12] for row in doc["summary"]] == ["GET /v1/jobs", "SSE: every j"]
