"""One term of leadership: what every part of the leader shares, and how the term ends.

A :class:`Term` carries the epoch and the fence of the grant (rules 1-2), the settings,
the clock, and the term's events: ``ready`` once recovery is done, ``stopped`` once the term
is over, ``wakeup`` to run a scheduling pass now. A part that meets a :class:`FencedError`
calls :meth:`Term.fenced`: the term stops and the JobManager steps down. Stopping never
touches an attempt running on a TaskManager: the next leader adopts it (rule 8).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from steward.config import Configuration, Settings
from steward.errors import FencedError, NotReadyError
from steward.ha.election import Leadership
from steward.ha.fencing import Fence
from steward.metrics import JobManagerMetrics

log = logging.getLogger(__name__)


@dataclass
class Term:
    """The shared context of one term; ``monotonic`` and ``wall`` are the clock."""

    epoch: int
    fence: Fence
    config: Configuration
    jobmanager_id: str
    on_fenced: Callable[[], None] = lambda: None
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    metrics: JobManagerMetrics = field(default_factory=JobManagerMetrics, repr=False)
    """The JobManager's event metrics (a registry of the term's own unless handed one)."""
    ready: threading.Event = field(default_factory=threading.Event, init=False)
    stopped: threading.Event = field(default_factory=threading.Event, init=False)
    wakeup: threading.Event = field(default_factory=threading.Event, init=False)
    _on_stop: list[Callable[[], None]] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def of(
        cls,
        leadership: Leadership,
        config: Configuration,
        jobmanager_id: str,
        on_fenced: Callable[[], None],
    ) -> Term:
        return cls(leadership.epoch, leadership.fence, config, jobmanager_id, on_fenced)

    def when_stopped(self, action: Callable[[], None]) -> None:
        """Run ``action`` when the term stops (in the order registered)."""
        self._on_stop.append(action)

    def stop(self) -> None:
        """End the term: stop scheduling and cleanup. Running attempts are left alone."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.wakeup.set()
        for action in self._on_stop:
            action()
        log.info("dispatcher stopped epoch=%d", self.epoch)

    def fenced(self, exc: FencedError) -> None:
        log.error("dispatcher fenced, stepping down epoch=%d cause=%s", self.epoch, exc)
        self.metrics.fenced_writes.inc()
        self.stop()
        self.on_fenced()

    def check_ready(self) -> None:
        if self.stopped.is_set():
            raise NotReadyError("this JobManager is no longer the leader")
        if not self.ready.is_set():
            raise NotReadyError("the leader is recovering its jobs")

    @property
    def settings(self) -> Settings:
        return self.config.settings

    @property
    def replacement_grace(self) -> float:
        return self.settings.jobmanager.replacement_grace

    @property
    def cancel_grace(self) -> float:
        return self.settings.jobmanager.cancel_grace
