"""What a process started through ``steward.cli`` imports (the cost: benchmarks/startup_cost.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("entry", ["steward.jobmanager.manager", "steward.taskmanager.manager"])
def test_a_process_that_talks_http_does_not_load_httpxs_command_line(entry: str) -> None:
    # A fresh interpreter: this test process may have imported rich for other tests. httpx
    # imports its command-line tool (rich, pygments: 0.15 s of CPU) unless steward.cli stands in.
    script = (
        f"import sys, steward.cli.main, {entry}, httpx\n"
        "print(sorted(m for m in ('httpx', 'pygments', 'rich.console') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )

    assert result.stdout.strip() == "['httpx']"


def test_httpxs_stand_in_says_what_it_is() -> None:
    script = "import steward.cli, httpx._main as m; m.main()"
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 1
    assert "httpx's command line is not loaded in a Steward process" in result.stderr
