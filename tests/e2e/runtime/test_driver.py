"""RunnerProcess and run_to_completion: real runner processes, tiny pipelines, no Spark.

The driver is the TaskManager's (and the leader's, for initialize hooks) side of the runner
protocol: it must always come back with exactly one outcome, and a cancelled or timed-out
runner must leave no process behind.
"""

from __future__ import annotations

import signal
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_harness import launch_document

from steward.supervisor.completion import run_to_completion
from steward.supervisor.runner_process import RunnerProcess
from steward.wire.runner_protocol import (
    FailedEvent,
    FinishedEvent,
    LaunchDocument,
    ProgressEvent,
    RunMode,
    RunnerEvent,
)
from support import pid_alive, wait_until

DEADLINE = 30.0

HANGS = """
import time

def main(ctx):
    ctx.report_progress(phase="hanging")
    while True:
        time.sleep(0.05)
"""

IGNORES_SIGTERM = """
import signal
import time

def main(ctx):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ctx.report_progress(phase="deaf")
    while True:
        time.sleep(0.05)
"""


def pipeline(tmp_path: Path, source: str, name: str = "driven_job.py") -> Path:
    folder = tmp_path / "code"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunnerEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: RunnerEvent) -> None:
        with self._lock:
            self.events.append(event)

    def kinds(self) -> list[str]:
        with self._lock:
            return [event.event for event in self.events]

    def has(self, kind: type[RunnerEvent]) -> bool:
        with self._lock:
            return any(isinstance(event, kind) for event in self.events)


def start(tmp_path: Path, launch: LaunchDocument, recorder: Recorder) -> RunnerProcess:
    return RunnerProcess(
        launch, cwd=tmp_path / "work", log_path=tmp_path / "work" / "runner.log", on_event=recorder
    ).start()


def finish(runner: RunnerProcess) -> None:
    """Wait until the runner's whole group is gone and its events are all in."""
    assert runner.wait_gone(DEADLINE), runner.log_path.read_text()
    assert runner.wait_events_closed(DEADLINE)


@pytest.fixture
def runners() -> Iterator[list[RunnerProcess]]:
    started: list[RunnerProcess] = []
    yield started
    for runner in started:
        runner.kill()
        runner.wait_gone(10.0)
        runner.close()


def test_a_finished_runner_reports_its_value(tmp_path: Path, runners: list[RunnerProcess]) -> None:
    code = pipeline(tmp_path, "def main(ctx):\n    ctx.report_progress(n=1)\n    return [1, 2]\n")
    recorder = Recorder()

    runner = start(tmp_path, launch_document(code, tmp_path / "ck"), recorder)
    runners.append(runner)
    finish(runner)

    outcome = runner.outcome()
    assert isinstance(outcome, FinishedEvent) and outcome.value == [1, 2]
    assert recorder.kinds() == ["started", "progress", "finished"]
    assert runner.group.wait_exit(DEADLINE) == 0
    assert runner.log_path.exists()


def test_a_failed_runner_reports_the_traceback(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    code = pipeline(tmp_path, "def main(ctx):\n    raise KeyError('missing-input')\n")

    runner = start(tmp_path, launch_document(code, tmp_path / "ck"), Recorder())
    runners.append(runner)
    finish(runner)

    outcome = runner.outcome()
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "KeyError"
    assert "missing-input" in outcome.error.message
    assert outcome.error.traceback and "driven_job.py" in outcome.error.traceback


def test_a_runner_that_exits_without_a_final_event_is_lost(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    code = pipeline(tmp_path, "import os\n\ndef main(ctx):\n    os._exit(7)\n")

    runner = start(tmp_path, launch_document(code, tmp_path / "ck"), Recorder())
    runners.append(runner)
    finish(runner)

    outcome = runner.outcome()
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.AttemptLost"
    assert outcome.error.message == "runner exited with code 7 without a final event"


def test_cancel_raises_attempt_cancelled_and_the_group_goes(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    recorder = Recorder()
    runner = start(tmp_path, launch_document(pipeline(tmp_path, HANGS), tmp_path / "ck"), recorder)
    runners.append(runner)
    wait_until(lambda: recorder.has(ProgressEvent), DEADLINE, message="pipeline running")

    runner.cancel(grace=20.0)

    finish(runner)
    outcome = runner.outcome()
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.wire.runner_protocol.AttemptCancelled"
    assert runner.group.wait_exit(DEADLINE) == 1  # ended by itself, well within the grace


def test_a_runner_deaf_to_sigterm_is_killed_after_the_grace(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    recorder = Recorder()
    launch = launch_document(pipeline(tmp_path, IGNORES_SIGTERM), tmp_path / "ck")
    runner = start(tmp_path, launch, recorder)
    runners.append(runner)
    wait_until(lambda: recorder.has(ProgressEvent), DEADLINE, message="pipeline running")

    cancelled = time.monotonic()
    runner.cancel(grace=0.5)

    finish(runner)
    assert time.monotonic() - cancelled >= 0.5
    assert runner.group.wait_exit(DEADLINE) == -signal.SIGKILL
    outcome = runner.outcome()
    assert isinstance(outcome, FailedEvent) and outcome.error.type == "steward.AttemptLost"


def test_a_runner_whose_feed_stops_dies_by_its_deadman_switch(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    recorder = Recorder()
    launch = launch_document(pipeline(tmp_path, HANGS), tmp_path / "ck", deadman_timeout=1.0)
    runner = start(tmp_path, launch, recorder)
    runners.append(runner)
    wait_until(lambda: recorder.has(ProgressEvent), DEADLINE, message="pipeline running")
    pid = runner.pid
    assert pid is not None and pid_alive(pid)

    runner.stop_feeding()

    finish(runner)
    assert runner.group.wait_exit(DEADLINE) == -signal.SIGKILL


INITIALIZE = """
import time

def initialize(ctx):
    if ctx.args and ctx.args[0] == "hang":
        time.sleep(1000)
    return {"initialized": ctx.job_id, "mode": str(ctx.mode)}

def main(ctx):
    raise AssertionError("main must not run in initialize mode")
"""


def test_run_to_completion_runs_the_initialize_hook(tmp_path: Path) -> None:
    launch = launch_document(
        pipeline(tmp_path, INITIALIZE), tmp_path / "ck", mode=RunMode.INITIALIZE
    )

    outcome = run_to_completion(
        launch, cwd=tmp_path / "init", log_path=tmp_path / "init" / "init.log", timeout=DEADLINE
    )

    assert isinstance(outcome, FinishedEvent)
    assert outcome.value == {"initialized": "job-1", "mode": "initialize"}


def test_run_to_completion_kills_a_hook_past_its_timeout(tmp_path: Path) -> None:
    launch = launch_document(
        pipeline(tmp_path, INITIALIZE), tmp_path / "ck", mode=RunMode.INITIALIZE, args=["hang"]
    )
    began = time.monotonic()

    # Long enough for the runner to start and log on a loaded machine (2 s was not, at a load
    # of 14): what it logged must be in the log after the kill.
    outcome = run_to_completion(
        launch, cwd=tmp_path / "init", log_path=tmp_path / "init" / "init.log", timeout=6.0
    )

    assert time.monotonic() - began < 6.0 + 10.0
    assert isinstance(outcome, FailedEvent)
    assert outcome.error.type == "steward.InitializeTimeout"
    assert "6s" in outcome.error.message
    assert "initialize" in (tmp_path / "init" / "init.log").read_text()
