"""Driving a local cluster through the ``steward`` command, as a user's shell would.

Shared by the local-cluster tests (plain, with authentication, with TLS): the command runs
with no ``STEWARD_*`` variable of the test process, in the cluster's folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

LONG_RUNNING = Path(__file__).resolve().parents[3] / "examples" / "long_running.py"
FAST = ("-D", "high-availability.zookeeper.session-timeout=4s", "-D", "heartbeat.interval=200ms")


def steward(cwd: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run ``steward ARGS`` in ``cwd`` and return what it did (never raises for its exit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    return subprocess.run(
        [sys.executable, "-m", "steward.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def document(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(result).stdout)
