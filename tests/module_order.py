"""The order the default run hands modules to its workers: longest first.

With ``--dist loadfile`` a module runs whole on one worker, and pytest-xdist hands modules out
as workers free up. By default it sorts them by their number of tests, which puts the few-test,
long end-to-end modules last: one worker then runs a long tail alone while the other idles
(minutes of a fresh clone's run). Handing out the longest first (``--no-loadscope-reorder``
keeps this order) is the classic longest-processing-time rule: the short modules fill the gaps
at the end.

How long a module takes comes from ``tests/durations.json``: seconds per module, measured by a
default run with ``--record-durations`` (setup, call and teardown of each test, summed). A module
it does not know yet counts as the median, so a new module never waits for a refresh.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def known_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        durations = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(module): float(seconds) for module, seconds in durations.items()}


def longest_first(items: list[pytest.Item], durations: dict[str, float]) -> list[pytest.Item]:
    """``items`` with their modules longest first; within a module, the order is kept."""
    default = statistics.median(durations.values()) if durations else 0.0
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(module_of(item.nodeid), index)

    def key(item: pytest.Item) -> tuple[float, int]:
        module = module_of(item.nodeid)
        return (-durations.get(module, default), first_seen[module])

    return sorted(items, key=key)


class DurationRecorder:
    """Sums each module's test phases as the reports arrive (on the controller, from every
    worker) and writes them into ``path`` at the end, keeping the modules this run did not
    reach."""

    def __init__(self, path: Path = DURATIONS) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.seconds or hasattr(session.config, "workerinput"):
            return
        merged = {**known_durations(self.path), **self.seconds}
        rounded = {module: round(seconds, 1) for module, seconds in sorted(merged.items())}
        self.path.write_text(json.dumps(rounded, indent=1) + "\n")
