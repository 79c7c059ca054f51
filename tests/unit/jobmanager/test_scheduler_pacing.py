"""The scheduler's loop under a burst of wake-ups: passes are paced, not one per wake-up.

The pass itself is stubbed (it counts): what is tested is :meth:`Scheduler.run`'s pacing,
which does not depend on what a pass does."""

from __future__ import annotations

import threading
import time
from typing import Any

from steward.jobmanager.leader.context import TermContext
from steward.jobmanager.leader.scheduler import MIN_GAP, Scheduler
from steward.jobmanager.leader.term import Term
from steward.testing.waiting import wait_until


class _Membership:
    def refresh_if_changed(self) -> None:
        pass


class _Table:
    lock = threading.Lock()


class CountingScheduler(Scheduler):
    passes = 0

    def schedule_once(self) -> None:
        self.passes += 1


def _scheduler() -> tuple[Term, CountingScheduler]:
    term = Term(1, fence=None, config=None, jobmanager_id="jm")  # type: ignore[arg-type]
    none: Any = None
    ctx = TermContext(term, _Table(), stores=none, hooks=none)  # type: ignore[arg-type]
    return term, CountingScheduler(ctx, none, _Membership())  # type: ignore[arg-type]


def test_a_burst_of_wake_ups_runs_a_pass_per_gap_not_one_per_wake_up() -> None:
    term, scheduler = _scheduler()
    thread = threading.Thread(target=scheduler.run, daemon=True)
    thread.start()
    try:
        wakeups, started = 0, time.monotonic()
        while time.monotonic() - started < 10 * MIN_GAP:  # a submission every few µs
            term.wakeup.set()
            wakeups += 1
            time.sleep(0.0005)
        elapsed = time.monotonic() - started
        assert wakeups > 100
        assert scheduler.passes <= elapsed / MIN_GAP + 2, (scheduler.passes, elapsed)
        before = scheduler.passes
        term.wakeup.set()  # and a later one is still answered
        wait_until(lambda: scheduler.passes > before, timeout=5)
    finally:
        term.stop()
        thread.join(5)
