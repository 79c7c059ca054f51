"""Progress, paced: an attempt's new progress reaches the leader at most once per
``heartbeat.progress-interval`` (P), riding a heartbeat that goes anyway where it can.

A pipeline may report progress many times a second. When every new progress went with the next
poll, a busy TaskManager's reports changed on every poll: each was a full heartbeat, held one
``heartbeat.interval`` (I), so 1,000 such TaskManagers sent the leader 1,000 heartbeats a
second of every report (issue 22: more than a core of its CPU). Now the reports carry the
progress *published* (:meth:`~.reporting.Attempts.publish_progress`), and it is published:

- by the poller's heartbeat once P has passed since the last publication (:meth:`on_poll`);
  that heartbeat, like an unchanged one, asks the leader's idle hold, which the leader grants
  only if it keeps the reports (nothing but progress changed, no start in flight);
- by every heartbeat the notifier sends for a change (:meth:`publish`): it is full anyway;
- by this pacer's own heartbeat (:meth:`run`) when new progress is due and the poll out will
  not be back within an interval (it is held longer): so new progress reaches the leader
  within P + I of being reported, never more often than once per P (plus the changes').

With P = ``heartbeat.idle-hold`` (both 10 s by default) a busy TaskManager sends about one
request per hold, as an idle one does. Progress is best effort (it is shown, never recorded);
every change of state (a phase, a checkpoint, a Spark application, an outcome) still goes at
once through the notifier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from steward.taskmanager.reporting import Attempts


class ProgressPacer:
    """When the reports may carry new progress, and the thread that sends it when due."""

    def __init__(
        self,
        attempts: Attempts,
        every: float,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``every``: P, ``heartbeat.progress-interval``; ``interval``: I."""
        self._attempts = attempts
        self.every = max(every, interval)
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._published_at: float | None = None

    def due_at(self) -> float:
        """When new progress may be published next (now, if it never was)."""
        with self._lock:
            published = self._published_at
        return float("-inf") if published is None else published + self.every

    def publish(self) -> None:
        """Let the reports carry the latest progress (a heartbeat goes anyway)."""
        if self._attempts.publish_progress():
            with self._lock:
                self._published_at = self._clock()

    def on_poll(self) -> None:
        """The poller builds a heartbeat: it carries new progress once due."""
        if self._attempts.progressed.is_set() and self._clock() >= self.due_at():
            self.publish()

    def run(
        self,
        stop: threading.Event,
        back_by: Callable[[], float | None],
        send: Callable[[], object],
    ) -> None:
        """Send new progress when due unless the poll out carries it soon: ``back_by`` says
        when the poll out is expected back (None: none out, the next one publishes within an
        interval unless no leader is known); ``send`` sends a heartbeat at once."""
        progressed = self._attempts.progressed
        while not stop.is_set():
            progressed.wait()
            if stop.wait(max(0.0, self.due_at() - self._clock())):
                return
            if not progressed.is_set():
                continue  # a heartbeat published it meanwhile
            back = back_by()
            if back is not None and back <= self._clock() + self._interval:
                # The poll is back within an interval and its successor publishes it.
                stop.wait(max(0.0, back - self._clock()) + self._interval)
                continue
            self.publish()
            send()
