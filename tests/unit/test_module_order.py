"""The default run's module order (tests/module_order.py): longest modules first, each whole."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from module_order import DurationRecorder, known_durations, longest_first


def items(*nodeids: str) -> list[Any]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_modules_go_longest_first_and_keep_their_own_order() -> None:
    collected = items("a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2")
    durations = {"a.py": 1.0, "b.py": 30.0, "c.py": 5.0}

    ordered = [item.nodeid for item in longest_first(collected, durations)]

    assert ordered == ["b.py::t1", "c.py::t1", "c.py::t2", "a.py::t1", "a.py::t2"]


def test_a_module_not_measured_yet_counts_as_the_median() -> None:
    collected = items("new.py::t", "long.py::t", "short.py::t", "mid.py::t")
    durations = {"long.py": 100.0, "mid.py": 10.0, "short.py": 1.0}

    ordered = [item.nodeid for item in longest_first(collected, durations)]

    # The median is mid.py's 10 s: the new module comes right before it (it was collected first).
    assert ordered == ["long.py::t", "new.py::t", "mid.py::t", "short.py::t"]


def test_without_durations_the_collection_order_stays() -> None:
    collected = items("b.py::t", "a.py::t")
    assert [item.nodeid for item in longest_first(collected, {})] == ["b.py::t", "a.py::t"]


def test_unreadable_durations_are_none(tmp_path: Path) -> None:
    bad = tmp_path / "durations.json"
    bad.write_text("{not json")
    assert known_durations(bad) == {}
    assert known_durations(tmp_path / "missing.json") == {}


def test_recorded_durations_sum_each_module_and_keep_the_others(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"old.py": 7.0, "a.py": 99.0}))
    recorder = DurationRecorder(path)
    for nodeid, seconds in [("a.py::t1", 1.25), ("a.py::t1", 0.5), ("b.py::t", 2.0)]:
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))  # type: ignore[arg-type]

    recorder.pytest_sessionfinish(SimpleNamespace(config=SimpleNamespace()))  # type: ignore[arg-type]

    assert json.loads(path.read_text()) == {"a.py": 1.8, "b.py": 2.0, "old.py": 7.0}


@pytest.mark.parametrize("worker", [True, False])
def test_only_the_controller_writes(tmp_path: Path, worker: bool) -> None:
    path = tmp_path / "durations.json"
    recorder = DurationRecorder(path)
    recorder.pytest_runtest_logreport(SimpleNamespace(nodeid="a.py::t", duration=1.0))  # type: ignore[arg-type]
    config = SimpleNamespace(workerinput={}) if worker else SimpleNamespace()

    recorder.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]

    assert path.exists() is not worker
