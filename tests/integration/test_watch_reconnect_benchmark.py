"""benchmarks/watch_reconnect.py keeps working: a quick run (200 jobs) prints its figures, and
a reconnect adds no thread per followed job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.zookeeper
def test_quick_run_prints_the_figures_and_a_reconnect_adds_no_thread_per_job() -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/watch_reconnect.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout)
    figures = doc["results"]["jobs_200"]
    assert figures["server_watches"] > 0
    assert figures["callback_wait_max_ms"] >= 0
    # kazoo's DataWatch recipes spawned two threads per job on this reconnect (400 here).
    assert figures["threads_peak_after_reconnect"] - figures["threads_before"] < 20, figures
