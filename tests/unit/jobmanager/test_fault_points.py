"""The test-only fault point freezes a real process where the environment says, and only there:
``<point>`` at every subject, ``<point>:<prefix>`` at subjects starting with ``prefix`` (what a
chaos campaign arms on every JobManager for its own jobs alone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from steward.jobmanager.faults import FREEZE_AT, SUBMIT_STORED
from steward.testing.waiting import wait_until

REACH = """
import threading, time
from steward.jobmanager import faults
def spin():
    while True:
        time.sleep(0.001)
for _ in range(2):  # other threads, running: a process-directed stop may be theirs to take
    threading.Thread(target=spin, daemon=True).start()
faults.reach({point!r}, {subject!r})
print("past the point", flush=True)
"""


def _reach(setting: str, point: str, subject: str) -> subprocess.Popen[bytes]:
    code = REACH.format(point=point, subject=subject)
    environ = {**os.environ, FREEZE_AT: setting}
    return subprocess.Popen([sys.executable, "-c", code], env=environ, stdout=subprocess.PIPE)


def _stopped(process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"exited ({process.returncode}) instead of freezing")
    return bool(psutil.Process(process.pid).status() == psutil.STATUS_STOPPED)


@pytest.mark.parametrize(
    ("setting", "subject"),
    [(SUBMIT_STORED, "any-job"), (f"{SUBMIT_STORED}:fz-", "fz-00001"), (f"{SUBMIT_STORED}:", "x")],
)
def test_the_point_asked_for_freezes_the_process(setting: str, subject: str) -> None:
    process = _reach(setting, SUBMIT_STORED, subject)
    try:
        wait_until(lambda: _stopped(process), 30.0, message="the process froze at the point")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    assert process.stdout is not None
    assert process.stdout.read() == b"", "the thread that reached the point ran past it"


@pytest.mark.parametrize(
    ("setting", "point", "subject"),
    [
        ("", SUBMIT_STORED, "any-job"),
        (f"{SUBMIT_STORED}:fz-", SUBMIT_STORED, "s7-00001-short"),
        ("elsewhere", SUBMIT_STORED, "any-job"),
        ("elsewhere:fz-", SUBMIT_STORED, "fz-00001"),
    ],
)
def test_any_other_point_or_subject_runs_on(setting: str, point: str, subject: str) -> None:
    process = _reach(setting, point, subject)
    try:
        assert process.wait(30) == 0
    finally:
        process.kill()
    assert process.stdout is not None
    assert process.stdout.read() == b"past the point\n"
