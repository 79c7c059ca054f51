"""The scheduler's loop under a burst of wake-ups: passes are paced, not one per wake-up.

The pass itself is stubbed (it counts): what is tested is :meth:`Scheduler.run`'s pacing,
which does not depend on what a pass does."""

from __future__ import annotations

import threading
import time
from typing import Any

from steward.jobmanager.leader.context import TermContext
from steward.jobmanager.leader.scheduler import MIN_GAP, SHARE, Scheduler, next_start
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


class CostlyScheduler(CountingScheduler):
    """Each pass takes ``COST`` seconds of CPU, as a pass over a backlog of thousands does."""

    COST = 0.02

    def schedule_once(self) -> None:
        super().schedule_once()
        until = time.thread_time() + self.COST
        while time.thread_time() < until:
            pass


def test_costly_passes_take_at_most_their_share_of_the_leaders_time() -> None:
    term = Term(1, fence=None, config=None, jobmanager_id="jm")  # type: ignore[arg-type]
    none: Any = None
    ctx = TermContext(term, _Table(), stores=none, hooks=none)  # type: ignore[arg-type]
    scheduler = CostlyScheduler(ctx, none, _Membership())  # type: ignore[arg-type]
    thread = threading.Thread(target=scheduler.run, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        while time.monotonic() - started < 1.0:  # wake-ups throughout, as a burst sends
            term.wakeup.set()
            time.sleep(0.001)
        elapsed = time.monotonic() - started
        # Paced by MIN_GAP alone this would be about 20 passes; each one's CPU now buys a
        # wait of (1 / SHARE - 1) times it after it.
        cycle = CostlyScheduler.COST / SHARE
        assert scheduler.passes <= elapsed / cycle + 2, (scheduler.passes, elapsed)
    finally:
        term.stop()
        thread.join(5)


def test_the_next_pass_waits_out_the_gap_or_the_share_whichever_is_later() -> None:
    assert next_start(10.0, 10.001, 0.001) == 10.0 + MIN_GAP
    assert next_start(10.0, 10.03, 0.02) == 10.03 + 0.02 * (1 / SHARE - 1)
