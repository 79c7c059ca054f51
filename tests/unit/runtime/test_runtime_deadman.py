"""The runner's stdin: reading the launch line, and the dead-man's switch on a real pipe."""

from __future__ import annotations

import os
import threading
import time

import pytest

from steward.runtime import deadman
from steward.runtime.deadman import DeadmanSwitch, read_launch_line
from steward.wire.runner_protocol import LaunchError
from support import Fired, wait_until


def test_the_launch_line_is_split_from_the_heartbeats_after_it(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b'{"schema"')
    os.write(write_end, b": 1}\n\n\n")

    assert read_launch_line(read_end, timeout=5) == (b'{"schema": 1}', b"\n\n")


def test_no_launch_line_in_time_is_a_launch_error(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b'{"half": ')

    started = time.monotonic()
    with pytest.raises(LaunchError, match=r"no launch document on stdin within 0\.3s"):
        read_launch_line(read_end, timeout=0.3)
    assert time.monotonic() - started >= 0.3


def test_eof_before_the_launch_line_says_how_much_arrived(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"12345")
    os.close(write_end)

    with pytest.raises(LaunchError, match=r"stdin closed .* \(got 5 bytes and no newline\)"):
        read_launch_line(read_end, timeout=5)


def test_an_endless_launch_line_is_refused(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_end, write_end = pipe
    monkeypatch.setattr(deadman, "MAX_LAUNCH_LINE", 1000)
    os.write(write_end, b"x" * 5000)

    with pytest.raises(LaunchError, match="longer than 1000 bytes"):
        read_launch_line(read_end, timeout=5)


def test_the_switch_fires_at_once_on_eof(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    fired = Fired()
    DeadmanSwitch(read_end, timeout=60, fire=fired).start()

    os.close(write_end)

    wait_until(lambda: fired.reasons, 5.0)
    assert fired.reasons == ["stdin closed by the parent"]


def test_the_switch_fires_after_silence_and_not_while_fed(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    fired = Fired()
    # The switch fires, by design, when its own thread could not run for a whole timeout,
    # whatever waits in the pipe (a suspended host): the timeout is long enough that no
    # machine running the suite starves a thread that long (0.5 s did, at a load of 15).
    timeout = 2.0
    stop_feeding = threading.Event()
    last_fed = [0.0]

    def feed() -> None:
        while not stop_feeding.wait(timeout / 10):
            last_fed[0] = time.monotonic()  # before the write: the switch hears it after
            os.write(write_end, b"\n")

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        DeadmanSwitch(read_end, timeout=timeout, fire=fired).start()
        fed_until = time.monotonic() + 1.5 * timeout
        wait_until(lambda: time.monotonic() >= fed_until or fired.reasons, 10.0)
        assert fired.reasons == [], "fired while heartbeats were arriving"
    finally:
        stop_feeding.set()
        feeder.join()

    wait_until(lambda: fired.reasons, 10.0)
    assert fired.reasons == ["no heartbeat on stdin for 2s"]
    # Silence began at the last write (up to timeout/5 before the feeder stopped), not at
    # the stop: measured from there, the switch waited its whole timeout.
    assert fired.at is not None and fired.at - last_fed[0] >= timeout * 0.95
