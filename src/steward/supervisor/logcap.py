"""The attempt log's size cap: a small process between an attempt's output and its runner.log.

Everything an attempt writes to stdout and stderr (the runner's records, the pipeline's
prints, the Spark JVM's output, a crash dump) goes into one pipe; a *log capper* process reads
that pipe and writes ``runner.log`` through :class:`CappedLog`, which keeps at most
``taskmanager.attempt-log.max-size`` bytes:

- the first half of the budget as it came (start-up, the SparkSession, the first errors);
- then, once output went missing, one marker line ``... N bytes dropped ...`` (N exact);
- then a rolling tail: the latest output (the last error and its traceback), between a
  quarter and a half of the budget, starting at a line boundary.

The file is in that order at every moment, so ``less`` and ``tail -F`` work while the
attempt runs. Nothing is kept in memory beyond one read (at most 1 MiB): when the tail
outgrows its share, the newest half of it is moved back behind the marker inside the file
and the file truncated, so a flood costs about twice its size in disk writes and nothing
else. Output below half the budget is written once, as before.

Why a separate process, started by the TaskManager before the runner (and not a thread of
the runner, nor of the TaskManager):

- *Every byte is covered*: the runner's fds 1 and 2 are the pipe from its first instruction,
  and every child inherits them (the Spark JVM, Python workers, subprocesses), so nothing can
  bypass the cap, not even Python's start-up errors or ``faulthandler``'s crash dumps.
- *It outlives the writers*: it runs in its own session, outside the attempt's process
  group, so the runner's final ``kill_leftovers``, the dead-man's switch and the
  TaskManager's group kill do not take it down before it drained the pipe: the last
  traceback reaches the file. It exits at EOF, i.e. when the last writer (runner, JVM,
  grandchildren) is gone, whether the TaskManager still lives or not. It holds no lease: the
  execution lease waits for the attempt's group only.
- *It costs the TaskManager nothing*: a flood never passes through the TaskManager (its
  memory stays flat, its heartbeats are not slowed by copying), and a TaskManager that dies
  does not cut its attempts' logs short.
- A thread in the runner would die with the runner (a SIGKILLed group loses its last
  lines, a segfault its crash dump) and compete with the pipeline for the GIL.

If the capper dies, writers get EPIPE (Python and the JVM ignore SIGPIPE): prints fail, the
attempt goes on or fails, but never blocks. If it is frozen (SIGSTOP), writers block once the
pipe is full; cancel (SIGKILL after the grace) and the dead-man's switch (which never waits
on its own log line) still end the attempt. A write error (a full disk) is counted as
dropped output and reading goes on, so a full disk never blocks the attempt either.

This module uses the standard library only: the capper runs as ``python -I -S logcap.py``
(about 30 ms to start, 13 MB resident, 16 MB during a flood).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

READ_SIZE = 1 << 20
"""Bytes per read from the pipe, and the pipe's capacity where the kernel allows it."""
_COPY_CHUNK = 1 << 20
_LINE_WINDOW = 64 * 1024
"""How far past a cut point a new line start is looked for (else the tail starts mid-line)."""
MARKER_RESERVE = 256
"""Bytes of the budget set aside for the marker line."""
_F_SETPIPE_SZ = 1031
DROPPED_SUFFIX = ".dropped"
"""``runner.log.dropped``: how many bytes the capper dropped in all, written when it exits
(only if it dropped any): the TaskManager counts them in a metric."""


def marker_line(dropped: int, needs_newline: bool) -> bytes:
    """The line that stands for ``dropped`` bytes of output between the head and the tail."""
    text = (
        f"... {dropped} bytes dropped (taskmanager.attempt-log.max-size: the beginning and"
        " the end of the output are kept) ...\n"
    )
    return (b"\n" if needs_newline else b"") + text.encode()


class CappedLog:
    """Writes a stream to ``fd`` (a regular file opened for reading and writing, without
    O_APPEND) within ``max_size``.

    Layout of the file: ``head | marker | tail``. The head fills first, up to half the budget;
    output after it is appended to the tail; when the tail would exceed its share, its oldest
    part is dropped: the kept part moves back right behind a new marker line.
    """

    def __init__(self, fd: int, max_size: int) -> None:
        if max_size < 4 * MARKER_RESERVE:
            raise ValueError(f"max_size {max_size} is too small for a head, a marker and a tail")
        self._fd = fd
        self._head_limit = max_size // 2
        self._tail_limit = max_size - self._head_limit - MARKER_RESERVE
        size = os.fstat(fd).st_size  # a reused file: what is there counts as written
        self._head = min(size, self._head_limit)
        self._tail = size - self._head
        self._head_ends_line = self._head == 0 or os.pread(fd, 1, self._head - 1) == b"\n"
        self._marker = b""
        self.dropped = 0
        """Bytes of output not in the file (dropped to stay within the budget, or unwritable)."""
        self.write_errors = 0

    @property
    def size(self) -> int:
        """The file's size as this writer left it."""
        return self._head + len(self._marker) + self._tail

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Add ``data`` to the log; an OS error (full disk) drops it and is counted."""
        view = memoryview(data)
        if not view:
            return
        try:
            if self._tail == 0 and not self._marker and self._head < self._head_limit:
                take = min(len(view), self._head_limit - self._head)
                self._pwrite(view[:take], self._head)
                self._head += take
                self._head_ends_line = view[take - 1] == 0x0A  # newline
                view = view[take:]
            if len(view):
                self._append_tail(view)
        except OSError:
            self.write_errors += 1
            self.dropped += len(view)

    def _append_tail(self, data: memoryview) -> None:
        if self._tail + len(data) <= self._tail_limit:
            self._pwrite(data, self.size)
            self._tail += len(data)
            return
        # The tail stream is the tail in the file followed by ``data``: keep its newest half.
        total = self._tail + len(data)
        cut = self._line_start(total - self._tail_limit // 2, data, total)
        marker = marker_line(self.dropped + cut, not self._head_ends_line)
        start = self._head + len(marker)
        if cut < self._tail:
            kept = self._tail - cut
            self._move(self._head + len(self._marker) + cut, start, kept)
            self._pwrite(data, start + kept)
            new_tail = kept + len(data)
        else:
            rest = data[cut - self._tail :]
            self._pwrite(rest, start)
            new_tail = len(rest)
        # Written after the move: a longer marker must not overwrite bytes still to be moved.
        self._pwrite(memoryview(marker), self._head)
        os.ftruncate(self._fd, start + new_tail)
        self.dropped += cut
        self._marker, self._tail = marker, new_tail

    def _line_start(self, cut: int, data: memoryview, total: int) -> int:
        """``cut`` moved just past the next newline of the tail stream, if one is near."""
        window = self._stream(cut, min(_LINE_WINDOW, total - cut), data)
        newline = window.find(b"\n")
        if newline < 0 or cut + newline + 1 >= total:
            return cut
        return cut + newline + 1

    def _stream(self, offset: int, length: int, data: memoryview) -> bytes:
        """``length`` bytes of the tail stream (file tail, then ``data``) from ``offset``."""
        parts = []
        if offset < self._tail:
            from_file = min(length, self._tail - offset)
            begin = self._head + len(self._marker) + offset
            parts.append(os.pread(self._fd, from_file, begin))
            length -= from_file
            offset += from_file
        if length > 0:
            parts.append(bytes(data[offset - self._tail : offset - self._tail + length]))
        return b"".join(parts)

    def _move(self, src: int, dst: int, length: int) -> None:
        # dst < src: copying forward, chunk by chunk, never overwrites what is still to copy.
        done = 0
        while done < length:
            chunk = os.pread(self._fd, min(_COPY_CHUNK, length - done), src + done)
            if not chunk:
                break
            self._pwrite(memoryview(chunk), dst + done)
            done += len(chunk)

    def _pwrite(self, data: memoryview, offset: int) -> None:
        while len(data):
            written = os.pwrite(self._fd, data, offset)
            data, offset = data[written:], offset + written


def pump(source: int, log: CappedLog) -> None:
    """Copy ``source`` into ``log`` until EOF; the capper's main loop."""
    while True:
        try:
            chunk = os.read(source, READ_SIZE)
        except InterruptedError:
            continue
        if not chunk:
            return
        log.write(chunk)


class LogCapper:
    """The parent's handle on one capper process (see the module docstring)."""

    def __init__(self, process: subprocess.Popen[bytes], write_fd: int, dropped_file: Path) -> None:
        self.process = process
        self.write_fd: int | None = write_fd
        """The pipe's write end: give it to the attempt as stdout and stderr, then close it."""
        self.dropped_file = dropped_file

    @classmethod
    def start(cls, log_path: Path, max_size: int) -> LogCapper:
        """Open (create) ``log_path`` and start a capper writing it; raises OSError."""
        # Read-write: rolling the tail reads back what it keeps. No O_APPEND: pwrite places.
        log_fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            read_fd, write_fd = os.pipe()
            with contextlib.suppress(OSError):  # a bigger pipe: fewer wake-ups in a flood
                fcntl.fcntl(write_fd, _F_SETPIPE_SZ, READ_SIZE)
            try:
                command = [sys.executable, "-I", "-S", __file__, "--max-size", str(max_size)]
                process = subprocess.Popen(
                    [*command, "--dropped-file", str(dropped_file_of(log_path))],
                    stdin=read_fd,
                    stdout=log_fd,
                    cwd=log_path.parent,
                    start_new_session=True,
                )
            except BaseException:
                os.close(write_fd)
                raise
            finally:
                os.close(read_fd)
        finally:
            os.close(log_fd)
        return cls(process, write_fd, dropped_file_of(log_path))

    def close_write_end(self) -> None:
        """Close the parent's copy of the write end (EOF comes once the attempt's copies go)."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None

    def poll(self) -> int | None:
        """The capper's exit code (reaping it), or None while it drains."""
        return self.process.poll()

    @property
    def pid(self) -> int:
        return self.process.pid

    def dropped(self) -> int | None:
        """Bytes the capper dropped in all once it has exited (reaping it), None before."""
        if self.poll() is None:
            return None
        return read_dropped(self.dropped_file)


def dropped_file_of(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + DROPPED_SUFFIX)


def read_dropped(path: Path) -> int:
    """The count a capper left in ``path``; 0 if it left none (it dropped nothing)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


def write_dropped(path: Path, dropped: int) -> None:
    """Leave ``dropped`` in ``path``, whole or not at all (a temporary name, renamed)."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(f"{dropped}\n", encoding="ascii")
    os.replace(temporary, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="logcap.py",
        description="Copy stdin to stdout (a regular file) keeping its head and its tail"
        " within --max-size bytes.",
    )
    parser.add_argument("--max-size", type=int, required=True)
    parser.add_argument("--dropped-file", type=Path, help="where to leave the dropped count")
    args = parser.parse_args(argv)
    log = CappedLog(1, args.max_size)
    pump(0, log)
    if log.dropped and args.dropped_file is not None:
        with contextlib.suppress(OSError):  # a full disk: the marker line still says it
            write_dropped(args.dropped_file, log.dropped)
    if log.write_errors:
        print(
            f"steward log capper: {log.write_errors} write(s) to the attempt log failed;"
            f" {log.dropped} bytes dropped in all",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
