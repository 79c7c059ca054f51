"""The attempt log's cap (supervisor.logcap.CappedLog): head kept, tail rolls, marker counts.

Given a stream of numbered lines written in arbitrary chunks, the file never exceeds the
budget, and reads: the stream's first bytes as they came, one marker line with the exact
number of bytes dropped, then the stream's last bytes starting at a line boundary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.supervisor.logcap import CappedLog

MARKER = re.compile(
    rb"(\n?)\.\.\. (\d+) bytes dropped \(taskmanager\.attempt-log\.max-size[^\n]*\n"
)


@pytest.fixture
def log_fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "runner.log", os.O_RDWR | os.O_CREAT, 0o644)
    yield fd
    os.close(fd)


def lines(count: int, width: int = 40) -> bytes:
    return b"".join(f"line {n:06d} ".ljust(width, "x").encode() + b"\n" for n in range(count))


def write_in_chunks(log: CappedLog, stream: bytes, sizes: list[int]) -> None:
    offset, index = 0, 0
    while offset < len(stream):
        size = sizes[index % len(sizes)] if sizes else len(stream)
        log.write(stream[offset : offset + size])
        offset += size
        index += 1


def contents(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size + 1, 0)


def check_capped(text: bytes, stream: bytes, max_size: int) -> tuple[bytes, int, bytes]:
    """Assert the layout; return (head, dropped, tail)."""
    assert len(text) <= max_size
    match = MARKER.search(text, max_size // 2)
    assert match is not None, text[max_size // 2 - 100 : max_size // 2 + 200]
    head, dropped, tail = text[: match.start()], int(match.group(2)), text[match.end() :]
    assert head == stream[: max_size // 2]
    assert bool(match.group(1)) == (not head.endswith(b"\n"))
    assert stream.endswith(tail)
    assert len(head) + dropped + len(tail) == len(stream), "the marker counts every byte"
    assert stream[len(stream) - len(tail) - 1 : len(stream) - len(tail)] == b"\n", (
        "the tail starts at a line boundary"
    )
    # At least half the tail's share, less the part line it starts after (<= 301 bytes here).
    assert len(tail) >= (max_size - max_size // 2 - 256) // 2 - 301
    return head, dropped, tail


def test_output_within_the_budget_is_written_as_is(log_fd: int) -> None:
    log = CappedLog(log_fd, 64 * 1024)
    stream = lines(1000)  # 41 000 bytes
    write_in_chunks(log, stream, [1, 7, 4096, 333])
    assert contents(log_fd) == stream
    assert log.dropped == 0


def test_a_flood_keeps_the_head_a_marker_and_a_rolling_tail(log_fd: int) -> None:
    max_size = 64 * 1024
    log = CappedLog(log_fd, max_size)
    stream = lines(50_000)  # about 2 MB: the tail rolls many times
    write_in_chunks(log, stream, [65536, 1, 4000, 123_457])
    text = contents(log_fd)
    head, dropped, tail = check_capped(text, stream, max_size)
    assert head.startswith(b"line 000000 ")
    assert tail.endswith(lines(50_000)[-41:]), "the last line is there"
    assert log.dropped == dropped
    assert text.count(b"bytes dropped") == 1


def test_one_huge_write_keeps_only_its_end_as_the_tail(log_fd: int) -> None:
    max_size = 16 * 1024
    log = CappedLog(log_fd, max_size)
    stream = lines(10_000)
    log.write(stream)
    check_capped(contents(log_fd), stream, max_size)


def test_a_head_that_ends_mid_line_puts_the_marker_on_its_own_line(log_fd: int) -> None:
    max_size = 8 * 1024
    log = CappedLog(log_fd, max_size)
    stream = b"y" * 5000 + lines(2000)
    write_in_chunks(log, stream, [100])
    text = contents(log_fd)
    check_capped(text, stream, max_size)
    assert b"y" * (max_size // 2) + b"\n... " in text


def test_output_without_newlines_is_still_capped(log_fd: int) -> None:
    max_size = 8 * 1024
    log = CappedLog(log_fd, max_size)
    stream = bytes(range(256)).replace(b"\n", b"-") * 400
    write_in_chunks(log, stream, [999])
    text = contents(log_fd)
    assert len(text) <= max_size
    match = MARKER.search(text)
    assert match is not None
    tail = text[match.end() :]
    assert stream.endswith(tail)
    assert max_size // 2 + int(match.group(2)) + len(tail) == len(stream)


def test_what_the_file_held_already_counts_as_written(log_fd: int) -> None:
    os.write(log_fd, b"warm-up line\n" * 10)
    log = CappedLog(log_fd, 8 * 1024)
    log.write(b"attempt line\n")
    assert contents(log_fd) == b"warm-up line\n" * 10 + b"attempt line\n"


def test_a_write_error_is_counted_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "runner.log"
    path.touch()
    fd = os.open(path, os.O_RDONLY)
    try:
        log = CappedLog(fd, 8 * 1024)
        log.write(b"lost\n")
        assert (log.write_errors, log.dropped) == (1, 5)
    finally:
        os.close(fd)


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=3000),
    width=st.integers(min_value=12, max_value=300),
    sizes=st.lists(st.integers(min_value=1, max_value=20_000), min_size=1, max_size=8),
)
def test_any_chunking_gives_a_file_within_the_budget_with_head_and_tail_of_the_stream(
    tmp_path_factory: pytest.TempPathFactory, count: int, width: int, sizes: list[int]
) -> None:
    max_size = 8 * 1024
    path = tmp_path_factory.mktemp("cap") / "runner.log"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        log = CappedLog(fd, max_size)
        stream = lines(count, width)
        write_in_chunks(log, stream, sizes)
        text = contents(fd)
        if len(stream) <= max_size // 2 + log._tail_limit:
            assert text == stream
        else:
            check_capped(text, stream, max_size)
    finally:
        os.close(fd)
