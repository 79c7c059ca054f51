"""A real runner's output through the log capper (steward.supervisor.logcap), as a TaskManager
starts it: every byte of the attempt's group is capped, the last lines arrive, and a capper
that dies or freezes never keeps an attempt from ending or its dead-man's switch from firing.

No ZooKeeper here: these are about processes and pipes. The TaskManager-level flood (through a
whole cluster) is in tests/e2e/bad_input.
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from steward.supervisor.runner_process import RunnerProcess
from steward.wire.jobs import JobSpec
from steward.wire.runner_protocol import FailedEvent, FinishedEvent, LaunchDocument
from support import wait_until

CAP = 4 << 20  # 4 MiB: more than a pipe read (1 MiB), so rolling the tail moves file bytes

# args: megabytes to print, then a file to write the pid of a child that floods too (as a JVM
# would: it inherits the runner's stdout), or "-".
FLOOD = """
import os, subprocess, sys

def main(ctx):
    print("FIRST LINE of the pipeline", flush=True)
    megabytes = int(ctx.args[0])
    child = subprocess.Popen([sys.executable, "-c",
        "import sys; sys.stderr.write('CHILD LINE\\\\n' * 100000)"])
    block = b"".join(b"%07d flooding the log\\n" % n for n in range(40000))  # ~1 MiB
    for _ in range(megabytes):
        sys.stdout.buffer.write(block)
    sys.stdout.flush()
    child.wait()
    print("LAST LINE of the pipeline", flush=True)
    return {"megabytes": megabytes}
"""

# Prints forever, after recording that it started. Each line is one page (4096 bytes): once
# the pipe is full, no later write, however short, can squeeze into a partly filled page.
ENDLESS = """
import sys

def main(ctx):
    open(ctx.args[0], "w").close()
    while True:
        sys.stdout.write("p" * 4095 + "\\n")
        sys.stdout.flush()
"""


def launch(tmp_path: Path, source: str, args: list[str], deadman: float = 30.0) -> LaunchDocument:
    pipeline = tmp_path / "pipeline.py"
    pipeline.write_text(textwrap.dedent(source))
    return LaunchDocument(
        job_id="job-log",
        attempt=1,
        epoch=1,
        spec=JobSpec(job_id="job-log", args=args),
        artifact_path=str(pipeline),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        deadman_timeout=deadman,
    )


@pytest.fixture
def runners() -> Iterator[list[RunnerProcess]]:
    started: list[RunnerProcess] = []
    yield started
    for runner in started:
        runner.kill()
        runner.wait_gone(10)
        capper = runner.group.capper if runner.pid is not None else None
        if capper is not None and capper.poll() is None:
            capper.process.kill()
            capper.process.wait(10)
        runner.close()


def start(
    tmp_path: Path, runners: list[RunnerProcess], document: LaunchDocument, cap: int | None = CAP
) -> RunnerProcess:
    folder = tmp_path / "attempt"
    runner = RunnerProcess(document, cwd=folder, log_path=folder / "runner.log", log_max_size=cap)
    runners.append(runner)
    runner.start()
    return runner


def capper_of(runner: RunnerProcess) -> psutil.Process:
    capper = runner.group.capper
    assert capper is not None
    return psutil.Process(capper.pid)


def test_a_flood_of_the_runner_and_its_child_is_capped_with_its_first_and_last_lines(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    runner = start(tmp_path, runners, launch(tmp_path, FLOOD, ["20"]))
    capper = capper_of(runner)
    assert os.getpgid(capper.pid) != runner.group.pgid, "the capper is not in the group"

    assert runner.wait_gone(120)
    outcome = runner.outcome()
    assert isinstance(outcome, FinishedEvent), outcome
    wait_until(lambda: runner.group.capper and runner.group.capper.poll() is not None, 30)
    assert runner.group.capper is not None
    assert runner.group.capper.poll() == 0, "every write of the capper succeeded"

    text = (tmp_path / "attempt" / "runner.log").read_bytes()
    assert len(text) <= CAP
    assert b"FIRST LINE of the pipeline" in text[: CAP // 2]
    assert b"bytes dropped" in text
    tail = text[text.index(b"bytes dropped") :]
    assert b"LAST LINE of the pipeline" in tail
    assert b"attempt finished job=job-log" in tail, "the runner's own last record arrives"
    dropped = int(text.split(b" bytes dropped")[0].rsplit(b"... ", 1)[1])
    marker_line = text[
        text.rindex(b"\n", 0, text.index(b"bytes dropped")) : text.index(
            b"\n", text.index(b"bytes dropped")
        )
        + 1
    ]
    printed = 20 * 40000 * 22 + 100000 * len(b"CHILD LINE\n")  # the pipeline's and the child's
    assert len(text) - len(marker_line) + dropped >= printed, "every byte written is counted"
    # And the capper left the same count for the TaskManager's metric
    assert runner.group.log_dropped() == dropped


def test_without_a_cap_the_log_is_written_whole(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    runner = start(tmp_path, runners, launch(tmp_path, FLOOD, ["2"]), cap=None)
    assert runner.wait_gone(120)
    assert runner.group.capper is None
    text = (tmp_path / "attempt" / "runner.log").read_bytes()
    assert len(text) > 2 << 20 and b"bytes dropped" not in text


def test_an_attempt_whose_capper_died_still_ends(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    started = tmp_path / "started"
    runner = start(tmp_path, runners, launch(tmp_path, ENDLESS, [str(started)]))
    wait_until(started.exists, 60, message="pipeline printing")

    capper_of(runner).kill()

    # Writes now fail with EPIPE: the pipeline's print raises, the attempt fails, nothing hangs.
    assert runner.wait_gone(60), "the attempt ended"
    outcome = runner.outcome()
    assert isinstance(outcome, FailedEvent), outcome
    assert outcome.error.type == "BrokenPipeError", outcome


def test_a_frozen_capper_does_not_stop_the_deadman_switch(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    started = tmp_path / "started"
    runner = start(tmp_path, runners, launch(tmp_path, ENDLESS, [str(started)], deadman=2.0))
    wait_until(started.exists, 60, message="pipeline printing")
    capper = capper_of(runner)
    capper.suspend()
    try:
        # The pipe fills and the pipeline blocks in write(); then the TaskManager goes silent.
        runner.stop_feeding()
        began = time.monotonic()
        assert runner.wait_gone(30), "the dead-man's switch killed the group"
        assert time.monotonic() - began < 20
    finally:
        capper.resume()
    wait_until(lambda: runner.group.capper and runner.group.capper.poll() is not None, 30)
    # Its last words could not get into the full pipe; that cost it at most half a second.
    assert len((tmp_path / "attempt" / "runner.log").read_bytes()) <= CAP


def test_cancel_ends_an_attempt_blocked_on_a_frozen_capper(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    started = tmp_path / "started"
    runner = start(tmp_path, runners, launch(tmp_path, ENDLESS, [str(started)]))
    wait_until(started.exists, 60, message="pipeline printing")
    capper = capper_of(runner)
    capper.suspend()
    try:
        runner.cancel(grace=1.0)
        assert runner.wait_gone(30), "SIGKILL after the grace ended the group"
    finally:
        capper.resume()
    assert capper.wait(30) == 0


def test_the_capper_follows_its_log_when_the_log_is_renamed(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    # What a warm spare's handover does (os.replace of its log into the attempt's folder).
    runner = start(tmp_path, runners, launch(tmp_path, FLOOD, ["10"]))
    moved = tmp_path / "moved.log"
    os.replace(tmp_path / "attempt" / "runner.log", moved)
    assert runner.wait_gone(120)
    wait_until(lambda: runner.group.capper and runner.group.capper.poll() is not None, 30)
    text = moved.read_bytes()
    assert len(text) <= CAP and b"LAST LINE of the pipeline" in text
    assert not (tmp_path / "attempt" / "runner.log").exists()


def test_the_capper_is_reaped_and_leaves_no_zombie(
    tmp_path: Path, runners: list[RunnerProcess]
) -> None:
    runner = start(tmp_path, runners, launch(tmp_path, FLOOD, ["1"]))
    pid = capper_of(runner).pid
    assert runner.wait_gone(120)

    def reaped() -> bool:
        runner.group.alive()  # the execution monitor's call, which also reaps the capper
        return not psutil.pid_exists(pid)  # a zombie still exists

    wait_until(reaped, 30, message="capper reaped")
