"""``--record-cpu PATH``: the CPU seconds each test module costs, written to ``PATH`` as JSON
(module: seconds), for finding what makes a test run long on a machine short of cores.

A test's CPU is its worker's own (``RUSAGE_SELF``: in-process JobManagers, clients, the test's
code) and that of the child processes the worker reaped meanwhile (``RUSAGE_CHILDREN``: each
JobManager, TaskManager, ZooKeeper server or CLI the test started and waited for, with what
those reaped in turn). A process that outlives its test (a session-scoped ZooKeeper server) is
counted in the test that reaps it, and one never reaped (a grandchild left to init) is not
counted: process accounting (``accton``, ``sa``) sees those.
"""

from __future__ import annotations

import json
import resource
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

from module_order import module_of

KEY = "cpu_seconds"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CpuMeter:
    """On a worker (or a run without workers): each test's CPU, sent with its teardown
    report."""

    def __init__(self) -> None:
        self._started = 0.0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        self._started = _cpu()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, None]:
        outcome = yield
        if call.when == "teardown":
            outcome.get_result().user_properties.append((KEY, _cpu() - self._started))


class CpuRecorder:
    """On the controller: sums the reports' CPU by module and writes them at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == KEY:
                self.seconds[module_of(report.nodeid)] += float(value)

    def pytest_sessionfinish(self) -> None:
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])
        self.path.write_text(json.dumps({m: round(s, 1) for m, s in ranked}, indent=1) + "\n")


def register(config: pytest.Config, path: str | None) -> None:
    if path is None:
        return
    config.pluginmanager.register(CpuMeter(), "cpu-meter")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(CpuRecorder(Path(path)), "cpu-recorder")
