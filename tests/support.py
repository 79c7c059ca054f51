"""The testing kit's helpers under the short import path tests use: ``from support import
wait_until`` (tests/ is on sys.path through its conftest). Most live in :mod:`steward.testing`
(deadlines instead of sleeps, free ports, the tests' ZooKeeper root); what needs the repository
itself (running a script of benchmarks/) is defined here.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steward.testing.ports import free_port, free_zookeeper_port
from steward.testing.processes import TEST_ROOT as ZK_TEST_ROOT
from steward.testing.spawning import pid_alive
from steward.testing.waiting import wait_until

__all__ = [
    "ROOT",
    "ZK_TEST_ROOT",
    "Clock",
    "Fired",
    "free_port",
    "free_zookeeper_port",
    "pid_alive",
    "run_benchmark",
    "wait_until",
]

ROOT = Path(__file__).parents[1]


class Clock:
    """A clock the test sets: calling it answers ``now``, which starts at ``start``."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Fired:
    """A callback of one reason (a dead-man's switch's ``on_fire``, say): every reason it was
    called with, in order, and the ``time.monotonic()`` of its last call."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.at: float | None = None

    def __call__(self, reason: str) -> None:
        self.at = time.monotonic()
        self.reasons.append(reason)


def run_benchmark(script: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``benchmarks/<script>`` with ``args`` from the repository's root, check that it
    succeeded, and return the JSON document it printed."""
    result = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def require_modules(**reasons: str) -> None:
    """Skip the calling test module, with its reason, unless each named module is installed.

    Unlike ``pytest.importorskip`` this does not import them: at a module's top that import
    happens at collection, in every xdist worker, whether or not it runs the module (s3fs and
    moto together cost each about 0.6 CPU-s).
    """
    for name, reason in reasons.items():
        if importlib.util.find_spec(name) is None:
            pytest.skip(reason, allow_module_level=True)


def server_watches(port: int) -> int:
    """The watches the ZooKeeper server on ``port`` holds (``mntr``'s ``zk_watch_count``, the
    total ``wchs`` gives)."""
    from steward.zookeeper.fourletter import four_letter_word

    for line in four_letter_word(port, "mntr", timeout=2.0).splitlines():
        key, _, value = line.partition("\t")
        if key == "zk_watch_count":
            return int(value)
    raise AssertionError("no zk_watch_count in mntr's answer")


def run_interleaved(threads: list[threading.Thread]) -> None:
    """Start ``threads`` and wait for them, the interpreter handing over between threads as
    often as it can meanwhile, so that a race's narrow window is met often."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)


def squat(choose: Callable[[], int]) -> socket.socket:
    """A socket bound on loopback to a port ``choose`` found free. Another test's process can
    take such a port before this binds it: then ``choose`` is asked again."""
    for _ in range(20):
        squatter = socket.socket()
        try:
            squatter.bind(("127.0.0.1", choose()))
        except OSError:
            squatter.close()
            continue
        return squatter
    raise AssertionError("no free port could be bound in 20 tries")
