"""Ground truth with real processes: the pipeline's lines, its lock, and the death watcher.

The pipeline module is run as it runs in a runner (``main(ctx)`` in its own process) with a
minimal context, then SIGKILLed: the watcher must record its start and its death, and the
lock must tell "still running" from "gone".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chaos.truth import DeathWatcher, prepare, still_running
from support import wait_until

CHAOS = Path(__file__).parent

RUN_ONE = """
import sys
sys.path.insert(0, {chaos!r})
import chaos_pipeline

class Ctx:
    job_id = {job!r}
    attempt = 1
    args = [{truth!r}, {seconds!r}, "plain"]
    def report_progress(self, **kw):
        pass

chaos_pipeline.main(Ctx())
"""


def _run_pipeline(truth_dir: Path, job: str, seconds: float) -> subprocess.Popen[bytes]:
    code = RUN_ONE.format(chaos=str(CHAOS), job=job, truth=str(truth_dir), seconds=str(seconds))
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_killed_attempt_gets_its_death_time_and_releases_its_lock(tmp_path: Path) -> None:
    prepare(tmp_path)
    watcher = DeathWatcher(tmp_path)
    watcher.start()
    proc = _run_pipeline(tmp_path, "victim", seconds=600)
    try:
        running = wait_until(watcher.running, 30, message="attempt seen starting")
        attempt = running[0]
        assert (attempt.job, attempt.pid) == ("victim", proc.pid)
        assert still_running(tmp_path, attempt)
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        wait_until(lambda: attempt.death_t is not None, 10, message="death recorded")
    finally:
        proc.kill()
        watcher.stop()
    assert attempt.death_t is not None and attempt.death_t >= killed_at
    assert attempt.death_t - killed_at < 2.0
    assert attempt.stop_t is None
    assert not still_running(tmp_path, attempt)


def test_a_finished_attempt_has_its_stop_line_and_value(tmp_path: Path) -> None:
    prepare(tmp_path)
    watcher = DeathWatcher(tmp_path)
    watcher.start()
    try:
        proc = _run_pipeline(tmp_path, "done", seconds=0.2)
        assert proc.wait(30) == 0
        truth = wait_until(
            lambda: [a for a in watcher.snapshot().attempts.values() if a.stop_t is not None],
            10,
            message="stop line read",
        )
    finally:
        watcher.stop()
    attempt = truth[0]
    assert attempt.value["job"] == "done" and attempt.value["pid"] == proc.pid
    assert attempt.stop_t is not None and attempt.stop_t > attempt.start_t
