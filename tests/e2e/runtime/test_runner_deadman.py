"""The dead-man's switch: a runner whose TaskManager goes silent or away takes its processes down.

The pipeline starts two ``sleep 1000`` grandchildren, one in the runner's process group and
one that escaped into a session of its own, then blocks in ``time.sleep`` (a C call). The
harness plays the TaskManager: it feeds heartbeats, then stops (a frozen parent) or closes
stdin (a dead one). Everything must be gone within the timeout plus a margin.
"""

from __future__ import annotations

import contextlib
import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_harness import RunnerHarness, launch_document, running

from steward.wire.runner_protocol import ProgressEvent, StartedEvent
from support import pid_alive, wait_until

DEADMAN_TIMEOUT = 2.0
MARGIN = 10.0

SLEEPERS = """
import subprocess
import time

def main(ctx):
    in_group = subprocess.Popen(["sleep", "1000"])
    escaped = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    open({pids!r}, "w").write(f"{{in_group.pid}} {{escaped.pid}}")
    ctx.report_progress(sleepers=[in_group.pid, escaped.pid])
    time.sleep(1000)
"""


@pytest.fixture
def sleepers_killed() -> Iterator[list[int]]:
    """Pids the test started outside the runner's group; killed whatever the test did."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def start_sleepers(tmp_path: Path, runner: RunnerHarness, cleanup: list[int]) -> list[int]:
    pids_file = tmp_path / "sleepers"
    code = tmp_path / "code" / "sleepers.py"
    code.parent.mkdir()
    code.write_text(textwrap.dedent(SLEEPERS.format(pids=str(pids_file))))
    runner.start(launch_document(code, tmp_path / "ck", deadman_timeout=DEADMAN_TIMEOUT))
    runner.wait_event(lambda e: isinstance(e, ProgressEvent), 30.0, "sleepers started")
    pids = [int(pid) for pid in pids_file.read_text().split()]
    cleanup.extend(pids)
    assert all(pid_alive(pid) for pid in pids)
    return pids


def assert_all_gone(runner: RunnerHarness, sleepers: list[int]) -> float:
    """Wait for the runner, its group and the escaped sleeper to die; return when it exited."""
    code = runner.wait_exit(DEADMAN_TIMEOUT + MARGIN)
    exited = time.monotonic()
    assert code == -9, f"exit code {code}\n{runner.log()}"
    wait_until(lambda: not any(pid_alive(pid) for pid in sleepers), MARGIN, message="sleepers gone")
    wait_until(lambda: runner.group_members() == [], MARGIN, message="process group gone")
    # A frozen parent may never drain the pipe: the switch writes no event.
    assert runner.kinds() == ["started", "progress"]
    assert "dead-man's switch" in runner.log()
    return exited


def test_silent_parent_kills_the_runner_and_its_processes(
    tmp_path: Path, sleepers_killed: list[int]
) -> None:
    with RunnerHarness(tmp_path / "work") as runner:
        sleepers = start_sleepers(tmp_path, runner, sleepers_killed)
        silenced = time.monotonic()

        runner.stop_feeding()

        exited = assert_all_gone(runner, sleepers)
        # The last heartbeat may have left up to one interval (0.2 s) before the silence.
        assert exited - silenced >= DEADMAN_TIMEOUT * 0.75
        assert "no heartbeat on stdin for 2s" in runner.log()


def test_closed_stdin_kills_the_runner_and_its_processes_at_once(
    tmp_path: Path, sleepers_killed: list[int]
) -> None:
    with RunnerHarness(tmp_path / "work") as runner:
        sleepers = start_sleepers(tmp_path, runner, sleepers_killed)
        closed = time.monotonic()

        runner.close_stdin()

        exited = assert_all_gone(runner, sleepers)
        # EOF is noticed right away, not after the timeout.
        assert exited - closed < DEADMAN_TIMEOUT
        assert "stdin closed by the parent" in runner.log()


def test_heartbeats_keep_a_runner_alive_past_many_timeouts(tmp_path: Path) -> None:
    launch = launch_document(
        Path(__file__).resolve().parents[3] / "examples" / "long_running.py",
        tmp_path / "ck",
        args=["--interval", "0.1"],
        deadman_timeout=0.5,
    )
    with running(tmp_path / "work", launch) as runner:
        # 4 s of ticks is 8 dead-man timeouts.
        runner.wait_event(
            lambda e: isinstance(e, ProgressEvent) and e.progress["elapsed"] >= 4.0,
            30.0,
            "progress after 4 s",
        )
        assert runner.process is not None and runner.process.poll() is None

        runner.stop_feeding()
        assert runner.wait_exit(0.5 + MARGIN) == -9


def test_a_parent_that_never_feeds_loses_the_runner(tmp_path: Path) -> None:
    code = tmp_path / "code" / "idle.py"
    code.parent.mkdir()
    code.write_text("import time\n\ndef main(ctx):\n    time.sleep(1000)\n")
    launch = launch_document(code, tmp_path / "ck", deadman_timeout=1.0)
    with running(tmp_path / "work", launch, feed=False) as runner:
        runner.wait_event(lambda e: isinstance(e, StartedEvent), 30.0, "started")
        assert runner.wait_exit(1.0 + MARGIN) == -9
