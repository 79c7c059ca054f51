"""The safety clock: CLOCK_BOOTTIME where the platform has it, and waits cut into slices."""

from __future__ import annotations

import sys
import time

import pytest

from steward import clock


@pytest.mark.skipif(sys.platform != "linux", reason="CLOCK_BOOTTIME is Linux's")
def test_the_safety_clock_is_boottime_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = time.clock_gettime

    def recording(clock_id: int) -> float:
        read.append(clock_id)
        return real(clock_id)

    monkeypatch.setattr(time, "clock_gettime", recording)
    assert clock.COUNTS_SUSPEND
    clock.now()
    assert read == [time.CLOCK_BOOTTIME]


def test_the_safety_clock_never_runs_behind_the_monotonic_one() -> None:
    # Boot time is monotonic time plus the time spent suspended.
    before = time.monotonic()
    now = clock.now()
    assert now >= before - 0.001
    assert clock.now() >= now


def test_a_wait_is_never_longer_than_a_slice_nor_past_its_deadline() -> None:
    assert clock.slice_of(3600.0) == clock.MAX_WAIT
    assert clock.slice_of(0.1) == 0.1
    assert clock.slice_of(-5.0) == 0.0
    assert 0 < clock.MAX_WAIT <= 0.5
