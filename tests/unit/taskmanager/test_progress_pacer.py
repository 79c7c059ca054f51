"""Progress, paced (issue 22): the reports carry an attempt's new progress at most once per
``heartbeat.progress-interval``; a poll carries it once due, a heartbeat sent for a change
carries it at once, and the pacer's thread sends it only when the poll out is held past the
time it is due.

Logic only, on a clock the test moves; the exchanges are tested against a real TaskManager in
tests/integration/taskmanager/test_paced_progress.py.
"""

from __future__ import annotations

import threading

from steward.taskmanager.progress_pacer import ProgressPacer
from steward.taskmanager.reporting import Attempt, Attempts
from steward.testing.attempts import start_attempt
from support import wait_until

EVERY = 10.0
INTERVAL = 1.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def running() -> tuple[Attempts, Attempt]:
    attempts = Attempts(slots=2)
    attempt = attempts.admit(start_attempt("job-a", 1, epoch=3), None, "")
    assert attempt is not None
    attempts.running(attempt, pid=1, started_at=1.0)
    return attempts, attempt


def progress(attempts: Attempts) -> object:
    [report] = attempts.reports()
    return report.progress


def test_the_reports_carry_progress_only_once_it_is_published() -> None:
    attempts, attempt = running()

    attempts.progress(attempt, {"rows": 1})

    assert attempts.progressed.is_set()
    assert progress(attempts) is None
    assert attempts.publish_progress()
    assert progress(attempts) == {"rows": 1}
    assert not attempts.progressed.is_set()
    assert not attempts.publish_progress()  # nothing new


def test_a_poll_carries_new_progress_at_most_once_per_interval_of_progress() -> None:
    attempts, attempt = running()
    clock = Clock()
    pacer = ProgressPacer(attempts, EVERY, INTERVAL, clock)
    attempts.progress(attempt, {"rows": 1})

    pacer.on_poll()  # never published: due at once
    assert progress(attempts) == {"rows": 1}

    attempts.progress(attempt, {"rows": 2})
    clock.now += EVERY - 0.1
    pacer.on_poll()
    assert progress(attempts) == {"rows": 1}  # not due yet
    clock.now += 0.1
    pacer.on_poll()
    assert progress(attempts) == {"rows": 2}


def test_a_heartbeat_sent_for_a_change_carries_the_latest_progress_at_once() -> None:
    attempts, attempt = running()
    clock = Clock()
    pacer = ProgressPacer(attempts, EVERY, INTERVAL, clock)
    attempts.progress(attempt, {"rows": 1})
    pacer.on_poll()
    attempts.progress(attempt, {"rows": 2})

    pacer.publish()

    assert progress(attempts) == {"rows": 2}
    assert pacer.due_at() == clock.now + EVERY


def test_a_progress_interval_shorter_than_the_heartbeat_interval_is_the_interval() -> None:
    attempts, _attempt = running()

    assert ProgressPacer(attempts, 0.1, INTERVAL).every == INTERVAL


def pacing(back_by: float | None) -> tuple[Attempts, list[object], threading.Event]:
    """A pacer's thread over an attempt with new progress, due now, the poll out expected
    back at ``back_by`` seconds from now (None: no poll out); what it sent."""
    attempts, attempt = running()
    clock = Clock()
    pacer = ProgressPacer(attempts, EVERY, INTERVAL, clock)
    attempts.progress(attempt, {"rows": 1})
    sent: list[object] = []
    stop = threading.Event()
    back = None if back_by is None else clock.now + back_by
    thread = threading.Thread(
        target=pacer.run,
        args=(stop, lambda: back, lambda: sent.append(progress(attempts))),
        daemon=True,
    )
    thread.start()
    return attempts, sent, stop


def test_the_pacer_sends_due_progress_while_the_poll_is_held_longer() -> None:
    _attempts, sent, stop = pacing(back_by=EVERY)
    try:
        wait_until(lambda: sent, 5.0, "the pacer's heartbeat")
        assert sent == [{"rows": 1}]
    finally:
        stop.set()


def test_the_pacer_leaves_due_progress_to_a_poll_back_within_an_interval() -> None:
    attempts, sent, stop = pacing(back_by=INTERVAL / 2)
    try:
        # Real time passes, the test's clock does not: the pacer keeps waiting for the poll.
        assert not stop.wait(0.3)
        assert sent == []
        assert progress(attempts) is None  # the poll's successor publishes it
    finally:
        stop.set()
