"""Fixtures of the bad-input tests: one real process cluster per module, and the CLI.

The cluster (two JobManagers, one TaskManager with four slots, on the session's ZooKeeper) is
shared by a module's tests to keep them fast; every test ends with ``check_alive()``, so a
scenario that kills a Steward process fails there, not in a later test.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from steward.testing.processes import ProcessCluster
from support import wait_until

CANCEL_GRACE = "2s"


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


def run_cli(cluster: ProcessCluster, *args: str, timeout: float = 60.0) -> CliRun:
    """``python -m steward.cli -D rest.address=<the JobManagers> ARGS`` as a subprocess."""
    addresses = ",".join(proc.address for proc in cluster.jobmanagers())
    argv = [sys.executable, "-m", "steward.cli", "-D", f"rest.address={addresses}", *args]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, cwd=cluster.workdir, check=False
    )
    return CliRun(done.returncode, done.stdout, done.stderr)


def assert_clear_error(run: CliRun, *needles: str) -> None:
    """Exit code != 0, no traceback, one line on stderr that names the problem."""
    assert run.returncode != 0, run
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    # click's usage errors add its two usage hint lines before the one error line.
    hints = ("Usage: ", "Try '")
    lines = [
        line for line in run.stderr.splitlines() if line.strip() and not line.startswith(hints)
    ]
    assert len(lines) == 1, f"expected one line on stderr, got: {run.stderr!r}"
    assert lines[0].lower().startswith("error"), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def _serves(address: str) -> bool:
    try:
        return httpx.get(address + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


NO_FAILURE_LIMITS = {
    "security.rate-limits.auth-failures.per-address": "0",
    "security.rate-limits.auth-failures.per-credential": "0",
}
"""The fuzzer makes up hundreds of tokens and cookies from the address the tests' own admin
client uses too: with the failure limits on, both would get 429 (what
tests/integration/jobmanager/test_rate_limits.py is about), not the answers these tests
check."""


def start_cluster(workdir: Path, quorum: str, **extra: str) -> ProcessCluster:
    cluster = ProcessCluster(
        workdir,
        quorum,
        f"t-bad-input-{secrets.token_hex(4)}",
        extra={"jobmanager.cancel-grace": CANCEL_GRACE, **NO_FAILURE_LIMITS, **extra},
    )
    try:
        cluster.start_jobmanager("jm-1")
        cluster.wait_ready(taskmanagers=0)
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=4)
        cluster.wait_ready(taskmanagers=1)
        # The tests ask the standby too: it must be serving, not only started.
        wait_until(lambda: all(_serves(p.address) for p in cluster.jobmanagers()), 60)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="module")
def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: object
) -> Iterator[ProcessCluster]:
    from steward.zookeeper.managed import ManagedEnsemble

    assert isinstance(zookeeper, ManagedEnsemble)
    with start_cluster(tmp_path_factory.mktemp("bad-input"), zookeeper.connect_string) as cluster:
        yield cluster
