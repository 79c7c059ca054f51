"""The runner keeps what its pipeline starts, even a daemon in a session of its own.

The pipeline (tests/escapers.py) starts ``sleep 1000`` through a double fork with ``setsid``:
the sleeper is in another session and process group, and its parent is gone. The runner,
started as a TaskManager starts it (without a cgroup here), must still kill it when the
attempt ends and when its dead-man's switch fires.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from runner_harness import RunnerHarness, launch_document

from escapers import ESCAPER, escaped_from, kill_sleepers
from steward.wire.runner_protocol import FinishedEvent, ProgressEvent
from support import pid_alive, wait_until

DEADMAN_TIMEOUT = 2.0
MARGIN = 10.0


@pytest.fixture
def escaped_pids() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    kill_sleepers(pids)


def start(tmp_path: Path, runner: RunnerHarness, escaped_pids: list[int], *args: str) -> int:
    """Run the escaping pipeline; the pid of its escaped sleeper, once it runs."""
    code = tmp_path / "code" / "escaper.py"
    code.parent.mkdir()
    code.write_text(ESCAPER)
    launch = launch_document(
        code,
        tmp_path / "ck",
        args=[str(tmp_path / "escaped.pid"), *args],
        deadman_timeout=DEADMAN_TIMEOUT,
    )
    runner.start(launch)
    event = runner.wait_event(lambda e: isinstance(e, ProgressEvent), 30.0, "sleeper started")
    assert isinstance(event, ProgressEvent)
    escaped = int(str(event.progress["escaped"]))
    escaped_pids.append(escaped)
    assert escaped_from(escaped, runner.pid)
    return escaped


def test_an_orphan_of_the_pipeline_is_adopted_by_the_runner(
    tmp_path: Path, escaped_pids: list[int]
) -> None:
    with RunnerHarness(tmp_path / "work") as runner:
        escaped = start(tmp_path, runner, escaped_pids, str(tmp_path / "never"))

        assert psutil.Process(escaped).ppid() == runner.pid


def test_a_daemonised_process_is_killed_when_the_attempt_ends(
    tmp_path: Path, escaped_pids: list[int]
) -> None:
    gate = tmp_path / "gate"
    with RunnerHarness(tmp_path / "work") as runner:
        # The gate holds the attempt open until the escape has been checked: without it the
        # attempt may end (and the runner kill the sleeper) before start() looks at it.
        escaped = start(tmp_path, runner, escaped_pids, str(gate))
        gate.touch()

        final = runner.wait_final(30.0)

        assert isinstance(final, FinishedEvent), runner.log()
        wait_until(lambda: not pid_alive(escaped), MARGIN, message="escaped sleeper gone")


def test_the_deadman_switch_kills_a_daemonised_process(
    tmp_path: Path, escaped_pids: list[int]
) -> None:
    with RunnerHarness(tmp_path / "work") as runner:
        escaped = start(tmp_path, runner, escaped_pids, str(tmp_path / "never"))

        runner.close_stdin()

        assert runner.wait_exit(DEADMAN_TIMEOUT + MARGIN) == -9
        wait_until(lambda: not pid_alive(escaped), MARGIN, message="escaped sleeper gone")
        assert "dead-man's switch" in runner.log()
