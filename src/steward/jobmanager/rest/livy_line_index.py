"""Where the lines of an attempt's log start, so Livy's line paging does not re-read the log.

``GET /batches/{id}/log?from=&size=`` pages a log by line and answers its line count. An
attempt's log only grows (its bytes never change once written), so a JobManager remembers,
per log, how many complete lines it has counted, the byte offset after them, and the offset
of every :data:`STEP`-th line. A call then reads the bytes added since the last one (to count
them) and the asked lines from the nearest remembered offset before them: paging a log of
``n`` lines from start to end reads it about once, not ``n / size`` times (the next page
starts where the last one ended, which is remembered too). Memory: a few
integers per :data:`STEP` lines of each of the last :data:`MAX_LOGS` logs read (least recently
used first out).

A :class:`Reading` is sans-I/O: it is fed the bytes from an offset and says when it has seen
enough; :func:`page_lines` is given how to read a log from an offset, which :mod:`.livy_logs`
does from a TaskManager's log route or the log archive.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

STEP = 1024
"""Lines between two remembered offsets: at most this many lines are skipped to reach one."""
MAX_LOGS = 512
"""Logs whose index a JobManager keeps (about 8 bytes per STEP lines each)."""
MAX_LINE = 10_000
"""Characters kept of one line."""


@dataclass(frozen=True)
class Lines:
    """Lines ``start`` to ``start + len(lines)`` of a log of ``total`` lines."""

    start: int
    total: int
    lines: list[str]


Read = Callable[["Reading"], Awaitable["Reading | None"]]
"""Feeds a reading the log's bytes from its offset, until it has enough or the log ends;
None if the log is not there."""


async def page_lines(
    indexes: LineIndexes, key: Hashable, read: Read, start: int | None, size: int
) -> Lines | None:
    """Lines ``start`` to ``start + size`` of the log ``key`` (None: the last ``size``) and its
    line count, by two reads: the bytes added since the index's end (counted), then the asked
    lines from the last remembered offset before them."""
    index = indexes.get(key)
    counted = await read(Reading(index, index.lines, index.end, 0, 0, count=True))
    if counted is None:
        return None
    total = counted.total()
    first = max(0, total - size) if start is None else start
    line, offset = index.start_for(first)
    asked = max(0, min(size, total - first))
    ranged = None
    if asked:
        ranged = await read(Reading(index, line, offset, first, asked, count=False))
        if ranged is not None:
            index.cursor = (ranged.line, ranged.offset)
    indexes.put(key, index)
    return Lines(first, total, [] if ranged is None else ranged.finish())


@dataclass
class LineIndex:
    """What is known of one log: ``marks[k]`` is the offset of line ``k * STEP``; ``lines``
    complete lines (ending in a newline) end at offset ``end``; the last page read ended
    before line ``cursor[0]``, at offset ``cursor[1]`` (where a client paging forward asks
    next)."""

    marks: list[int] = field(default_factory=lambda: [0])
    lines: int = 0
    end: int = 0
    cursor: tuple[int, int] = (0, 0)

    def start_for(self, line: int) -> tuple[int, int]:
        """The line and offset to read from to reach ``line``: the nearest known one at or
        before it (a mark, the last page's end, or the end of what is indexed)."""
        if line >= self.lines:
            return self.lines, self.end
        mark = line // STEP
        if mark * STEP <= self.cursor[0] <= line:
            return self.cursor
        return mark * STEP, self.marks[mark]


class LineIndexes:
    """The indexes of the logs read last, by key (job, attempt, source); thread-safe."""

    def __init__(self, limit: int = MAX_LOGS) -> None:
        self._limit = limit
        self._found: OrderedDict[Hashable, LineIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> LineIndex:
        """A copy of the index of ``key`` (empty if unknown): readers never share one."""
        with self._lock:
            found = self._found.get(key)
            if found is None:
                return LineIndex()
            self._found.move_to_end(key)
            return LineIndex(list(found.marks), found.lines, found.end, found.cursor)

    def put(self, key: Hashable, index: LineIndex) -> None:
        """Keep ``index`` unless a reader has indexed more of the log meanwhile."""
        with self._lock:
            found = self._found.get(key)
            if found is None or found.lines <= index.lines:
                self._found[key] = index
            self._found.move_to_end(key)
            while len(self._found) > self._limit:
                self._found.popitem(last=False)


class Reading:
    """Lines read from line ``line`` at byte ``offset`` on: those in ``[first, first + size)``
    are kept, and every complete line past ``index.end`` extends ``index``.

    ``count=True`` reads to the end of the log (the line count); otherwise :attr:`enough`
    turns True once the asked lines are kept."""

    def __init__(
        self, index: LineIndex, line: int, offset: int, first: int, size: int, *, count: bool
    ) -> None:
        self.index, self.line, self.offset = index, line, offset
        self.first, self.last = first, first + size
        self.count = count
        self.kept: list[str] = []
        self._partial = bytearray()
        self._partial_bytes = 0

    @property
    def enough(self) -> bool:
        return not self.count and self.line >= self.last

    def feed(self, chunk: bytes) -> None:
        """The next bytes of the log."""
        start = 0
        while not self.enough:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                self._carry(chunk[start:])
                return
            self._carry(chunk[start:newline])
            self._line_ends(self._partial_bytes + 1)
            start = newline + 1

    def total(self) -> int:
        """The lines seen, a last one without its newline (still being written) included."""
        return self.line + (1 if self._partial_bytes else 0)

    def finish(self) -> list[str]:
        """The kept lines, once the log's end is reached (its unfinished last line too)."""
        if self._partial_bytes and self.first <= self.line < self.last:
            self.kept.append(self._text())
        return self.kept

    def _carry(self, piece: bytes) -> None:
        room = MAX_LINE * 4 - len(self._partial)  # UTF-8: at most 4 bytes a character
        if room > 0:
            self._partial += piece[:room]
        self._partial_bytes += len(piece)

    def _line_ends(self, length: int) -> None:
        if self.first <= self.line < self.last:
            self.kept.append(self._text())
        self.line += 1
        self.offset += length
        self._partial.clear()
        self._partial_bytes = 0
        index = self.index
        if self.line == index.lines + 1 and self.offset > index.end:
            index.lines, index.end = self.line, self.offset
            if index.lines % STEP == 0:
                index.marks.append(index.end)

    def _text(self) -> str:
        return self._partial.decode("utf-8", errors="replace").rstrip("\r")[:MAX_LINE]
