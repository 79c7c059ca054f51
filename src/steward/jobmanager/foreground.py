"""``steward jobmanager``: one JobManager in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

from steward.config import Configuration

from .manager import JobManager

log = logging.getLogger(__name__)


def run(config: Configuration, jobmanager_id: str) -> int:
    """Run a JobManager in the foreground until SIGTERM or SIGINT; returns the exit code."""
    done = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received signal=%s", signal.Signals(signum).name)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager = JobManager(config, jobmanager_id).start()
    if config.settings.log.format == "text":  # in JSON, "jobmanager started" says it
        print(
            f"jobmanager {jobmanager_id} serving on {manager.address} pid={os.getpid()}", flush=True
        )
    try:
        while not done.wait(1.0):
            pass
    finally:
        manager.stop()
    return 0
