"""Test-only fault points: a JobManager started with ``STEWARD_FREEZE_AT=<point>`` stops itself
(SIGSTOP) when it reaches that point, so a test can kill it at an exact step with a real signal.

A point is a place where a crash is hard to hit by timing alone: ``submit.stored`` is after
the leader stored a submitted job and before it answered, the window in which a standby's
forward learns nothing of the outcome (docs/reliability.md). ``<point>:<prefix>`` freezes
only where the subject (a job id) starts with ``prefix``: a chaos campaign starts every
JobManager so and freezes whichever leads, once per job of its own. Unset (every real
deployment), :func:`reach` reads one environment variable and returns.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

FREEZE_AT = "STEWARD_FREEZE_AT"
SUBMIT_STORED = "submit.stored"


def reach(point: str, subject: str = "") -> None:
    """Freeze this process here if the environment asks for ``point`` (and ``subject``)."""
    wanted, _, prefix = os.environ.get(FREEZE_AT, "").partition(":")
    if wanted != point or not subject.startswith(prefix):
        return
    log.warning(
        "freezing at a test fault point point=%s subject=%s pid=%d", point, subject, os.getpid()
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    # To this thread, not the process: a process-directed SIGSTOP may be taken by another
    # thread, and this one ran on past the point (a chaos campaign under load saw its 201 go
    # out); a thread-directed one stops the whole process before this call returns.
    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
