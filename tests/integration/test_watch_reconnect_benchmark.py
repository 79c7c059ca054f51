"""benchmarks/watch_reconnect.py keeps working: a quick run (200 jobs) prints its figures, and
a reconnect adds no thread per followed job."""

from __future__ import annotations

import pytest

from support import run_benchmark


@pytest.mark.zookeeper
def test_quick_run_prints_the_figures_and_a_reconnect_adds_no_thread_per_job() -> None:
    doc = run_benchmark("watch_reconnect.py", "--quick", timeout=180)
    figures = doc["results"]["jobs_200"]
    assert figures["server_watches"] == 2  # jobs/ and results/, whatever the job count
    assert figures["change_seen_after_reconnect_s"] >= 0
    assert figures["callback_wait_max_ms"] >= 0
    # kazoo's DataWatch recipes spawned two threads per job on this reconnect (400 here).
    assert figures["threads_peak_after_reconnect"] - figures["threads_before"] < 20, figures
