"""A suspend of the host counts against the safety timeouts (rule 4).

A real suspend cannot be made here, so CLOCK_BOOTTIME is made to jump ahead while
CLOCK_MONOTONIC (and with it every kernel wait) does not: exactly what a host sees when it
resumes. ZooKeeper's servers counted the whole suspend against the session, so the dead-man's
switch and the liveness probe must act at once after the resume, not a whole timeout later.
"""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from steward.ha.liveness import LivenessProbe
from steward.runtime.deadman import DeadmanSwitch
from support import Fired, wait_until

pytestmark = pytest.mark.skipif(
    not hasattr(time, "CLOCK_BOOTTIME"), reason="needs CLOCK_BOOTTIME (Linux)"
)

SUSPEND = 100.0
"""Seconds the simulated suspend lasts: longer than every timeout below."""
NOTICED_WITHIN = 2.0
"""Seconds after the resume by which the suspend must have been acted on."""


class Suspender:
    """Makes CLOCK_BOOTTIME jump ahead of CLOCK_MONOTONIC, as a resume from suspend does."""

    def __init__(self) -> None:
        self._real = time.clock_gettime
        self.slept = 0.0

    def clock_gettime(self, clock_id: int) -> float:
        value = self._real(clock_id)
        return value + self.slept if clock_id == time.CLOCK_BOOTTIME else value

    def suspend(self, seconds: float) -> float:
        self.slept += seconds
        return time.monotonic()


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Suspender:
    suspender = Suspender()
    monkeypatch.setattr(time, "clock_gettime", suspender.clock_gettime)
    return suspender


def test_a_suspend_longer_than_the_deadman_timeout_fires_the_switch_at_the_resume(
    host: Suspender, pipe: tuple[int, int]
) -> None:
    read_end, _write_end = pipe
    fired = Fired()
    DeadmanSwitch(read_end, timeout=30.0, fire=fired).start()
    time.sleep(0.3)
    assert fired.reasons == []

    resumed = host.suspend(SUSPEND)

    wait_until(lambda: fired.reasons, NOTICED_WITHIN, message="the switch fired after resume")
    assert fired.reasons == ["no heartbeat on stdin for 30s"]
    assert fired.at is not None and fired.at - resumed < NOTICED_WITHIN


def test_a_heartbeat_right_after_the_resume_does_not_save_the_runner(
    host: Suspender, pipe: tuple[int, int]
) -> None:
    # The TaskManager wakes up with the runner and writes at once: too late, the leases
    # may be gone.
    read_end, write_end = pipe
    fired = Fired()
    stop = threading.Event()

    def feed() -> None:
        while not stop.wait(0.05):
            os.write(write_end, b"\n")

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        DeadmanSwitch(read_end, timeout=30.0, fire=fired).start()
        time.sleep(0.3)
        assert fired.reasons == []
        host.suspend(SUSPEND)
        wait_until(lambda: fired.reasons, NOTICED_WITHIN, message="the switch fired after resume")
    finally:
        stop.set()
        feeder.join()
    assert fired.reasons == ["no heartbeat on stdin for 30s"]


class FakeZooKeeper:
    """A session whose round trips answer at once until ``unreachable`` is set."""

    def __init__(self) -> None:
        self.unreachable = threading.Event()
        self.layout = SimpleNamespace(root="/steward/test")
        self.name = "fake"
        self.client = self
        self.dropped: list[str] = []

    def drop_connection(self, reason: str) -> None:
        self.dropped.append(reason)

    def sync_async(self, _path: str) -> Any:
        outcome = SimpleNamespace(failed=self.unreachable.is_set())

        def get(timeout: float | None = None) -> None:
            if outcome.failed:
                time.sleep(min(timeout or 0.0, 0.05))
                raise TimeoutError("no answer")

        def wait(timeout: float | None = None) -> bool:
            if outcome.failed:
                time.sleep(min(timeout or 0.0, 0.05))
                return False
            return True

        return SimpleNamespace(get=get, wait=wait, get_nowait=get)


def test_a_suspend_longer_than_fence_after_fences_at_the_resume(host: Suspender) -> None:
    zookeeper = FakeZooKeeper()
    fenced = Fired()
    probe = LivenessProbe(zookeeper, fence_after=30.0, on_fence=fenced)  # type: ignore[arg-type]
    probe.start()
    try:
        time.sleep(0.3)
        assert fenced.reasons == []
        # The session expired on the servers meanwhile: no round trip works after the resume.
        zookeeper.unreachable.set()
        resumed = host.suspend(SUSPEND)
        wait_until(lambda: fenced.reasons, NOTICED_WITHIN, message="fenced after the resume")
        wait_until(lambda: zookeeper.dropped, 5.0, message="the fenced connection dropped")
    finally:
        probe.stop()
    assert fenced.at is not None and fenced.at - resumed < NOTICED_WITHIN
    assert "fence-after 30s" in fenced.reasons[0]
