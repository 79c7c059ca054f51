"""The result store benchmark keeps working: a quick run prints its JSON document, and the
figure it exists for holds (ZooKeeper's own count of bytes per finished job under 200)."""

from __future__ import annotations

import pytest

from support import run_benchmark

pytestmark = pytest.mark.zookeeper


def test_quick_result_store_benchmark_prints_its_figures() -> None:
    document = run_benchmark("result_store.py", "--quick", timeout=180)
    (point,) = document["results"]["points"]
    assert point["results"] == 200
    assert point["zookeeper_bytes_per_job"] < 200
    assert point["legacy_zookeeper_bytes_per_job"] > 1000  # the whole entry, as before
    assert point["read_over_zookeeper_get"] > 0
    assert [row["figure"].split(",")[0] for row in document["summary"]] == [
        "ZooKeeper bytes per finished job",
        "result read (index + blob body) over a plain ZooKeeper get",
    ]
