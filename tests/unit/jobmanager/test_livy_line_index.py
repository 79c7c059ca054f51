"""Livy's line paging over a log file on disk (:mod:`steward.jobmanager.rest.livy_line_index`):
the right lines and count wherever a page starts, in a log that grows between calls, and a
whole log paged from start to end read about once, not once per page.

Pure logic on real files: the REST route over a TaskManager's log is tested by curl in
tests/e2e/cluster/test_livy.py, over the archive in tests/e2e/cluster/test_archived_logs.py.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from steward.jobmanager.rest.livy_line_index import (
    MAX_LINE,
    STEP,
    LineIndexes,
    Lines,
    Reading,
    page_lines,
)

KEY = ("livy-0", 1, "archive")


class FileLog:
    """Reads a log file from an offset, counting the bytes it reads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bytes_read = 0

    async def read(self, reading: Reading) -> Reading | None:
        with self.path.open("rb") as opened:
            opened.seek(reading.offset)
            while not reading.enough and (chunk := opened.read(1024)):
                self.bytes_read += len(chunk)
                reading.feed(chunk)
        return reading


def page(indexes: LineIndexes, log: FileLog, start: int | None, size: int) -> Lines:
    found = asyncio.run(page_lines(indexes, KEY, log.read, start, size))
    assert found is not None
    return found


def expected(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [line.rstrip("\r")[:MAX_LINE] for line in text.split("\n")][: text.count("\n")] + (
        [] if text.endswith("\n") or not text else [text.rsplit("\n", 1)[-1][:MAX_LINE]]
    )


def write_log(path: Path, lines: int, *, seed: int = 7, tail: str = "") -> None:
    rng = random.Random(seed)
    with path.open("a", encoding="utf-8", newline="") as out:
        for n in range(lines):
            ending = "\r\n" if n % 97 == 0 else "\n"
            out.write(f"line {n} " + "é" * rng.randrange(0, 40) + ending)
        out.write(tail)


def test_every_page_has_the_lines_and_count_a_full_read_gives(tmp_path: Path) -> None:
    path = tmp_path / "attempt.log"
    write_log(path, 3 * STEP + 17, tail="x" * (MAX_LINE + 50) + "\nhalf a line")
    log, indexes = FileLog(path), LineIndexes()
    lines = expected(path)
    rng = random.Random(1)
    starts = [0, 1, STEP - 1, STEP, 2 * STEP + 5, len(lines) - 2, len(lines), len(lines) + 9]
    for start in starts + [rng.randrange(len(lines)) for _ in range(20)]:
        found = page(indexes, log, start, 100)
        assert (found.start, found.total) == (start, len(lines))
        assert found.lines == lines[start : start + 100], start
    last = page(indexes, log, None, 3)
    assert (last.start, last.lines) == (len(lines) - 3, lines[-3:])
    assert last.lines[-1] == "half a line"


def test_a_log_paged_from_start_to_end_is_read_about_once(tmp_path: Path) -> None:
    path = tmp_path / "attempt.log"
    write_log(path, 20_000)
    log, indexes = FileLog(path), LineIndexes()
    got: list[str] = []
    while len(got) < 20_000:
        got += page(indexes, log, len(got), 100).lines
    assert got == expected(path)
    # 200 pages: a full read each is about 200 times the log (measured 206 without the
    # index); with it, one read to count, then each page from where the last one ended.
    assert log.bytes_read < 3 * path.stat().st_size, log.bytes_read / path.stat().st_size


def test_a_growing_log_is_counted_from_where_the_last_call_ended(tmp_path: Path) -> None:
    path = tmp_path / "attempt.log"
    write_log(path, 5000, tail="partial")
    log, indexes = FileLog(path), LineIndexes()
    assert page(indexes, log, None, 1).total == 5001
    size = path.stat().st_size
    log.bytes_read = 0
    with path.open("a") as out:
        out.write(" end\nmore\n")
    found = page(indexes, log, 5000, 10)
    assert (found.total, found.lines) == (5002, ["partial end", "more"])
    assert log.bytes_read < size / 4, (log.bytes_read, size)


def test_the_indexes_keep_only_the_logs_read_last() -> None:
    indexes = LineIndexes(limit=2)
    for job in ("a", "b", "c"):
        index = indexes.get(job)
        index.lines, index.end = 10, 100
        indexes.put(job, index)
    assert indexes.get("a").lines == 0  # dropped, the least recently used
    assert (indexes.get("b").lines, indexes.get("c").end) == (10, 100)
