"""The events channel: whole lines, final event last, and a broken pipe never reaches user code."""

from __future__ import annotations

import os
import threading

import pytest

from steward.runtime.channel import EventChannel, MemorySink
from steward.wire.records import ErrorInfo
from steward.wire.runner_protocol import (
    FailedEvent,
    FinishedEvent,
    ProgressEvent,
    StartedEvent,
    decode_event,
)


def read_lines(fd: int) -> list[bytes]:
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    except BlockingIOError:
        pass
    return data.splitlines()


def test_events_are_written_as_lines_and_nothing_follows_the_final_one(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    channel = EventChannel(write_end)

    assert channel.emit(StartedEvent(pid=1, pgid=1))
    assert channel.emit(FinishedEvent(value=3))
    assert not channel.emit(ProgressEvent(progress={"late": True}))
    assert not channel.emit(FailedEvent(error=ErrorInfo(type="X", message="late")))

    events = [decode_event(line) for line in read_lines(read_end)]
    assert [e.event for e in events] == ["started", "finished"]
    assert channel.closed


def test_the_events_fd_is_not_inherited_by_processes_the_pipeline_starts(
    pipe: tuple[int, int],
) -> None:
    _, write_end = pipe
    os.set_inheritable(write_end, True)  # as pass_fds leaves it in the runner

    EventChannel(write_end)

    assert not os.get_inheritable(write_end)


def test_a_closed_fd_is_refused_before_anything_runs() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)

    with pytest.raises(OSError):
        EventChannel(write_end)


def test_a_broken_pipe_drops_events_instead_of_raising(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    channel = EventChannel(write_end)
    os.close(read_end)

    assert not channel.emit(ProgressEvent(progress={"n": 1}))
    assert not channel.emit(FinishedEvent())


def test_concurrent_writers_never_interleave_lines(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    channel = EventChannel(write_end)
    received: list[bytes] = []
    reader = threading.Thread(
        target=lambda: received.extend(os.fdopen(read_end, "rb", closefd=False).readlines())
    )
    reader.start()
    payload = "x" * 20_000  # larger than PIPE_BUF: one write is not atomic on its own

    def report(thread: int) -> None:
        for n in range(20):
            channel.emit(ProgressEvent(progress={"thread": thread, "n": n, "pad": payload}))

    writers = [threading.Thread(target=report, args=(t,)) for t in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    channel.emit(FinishedEvent())
    os.close(write_end)
    reader.join(timeout=30)

    events = [decode_event(line) for line in received]
    assert len(events) == 8 * 20 + 1
    assert events[-1].event == "finished"


def test_memory_sink_keeps_events_until_the_final_one() -> None:
    sink = MemorySink()

    assert sink.emit(ProgressEvent(progress={}))
    assert sink.emit(FinishedEvent())
    assert not sink.emit(ProgressEvent(progress={}))
    assert [e.event for e in sink.events] == ["progress", "finished"]  # type: ignore[attr-defined]
