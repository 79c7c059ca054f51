"""Fixtures of the unit tests: ``pipe``, a real OS pipe (read end, write end), both ends closed
after the test unless the test closed them itself; ``synced``, the path of every file
``os.fsync`` is called on during the test (the real fsync runs)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):
            os.close(fd)


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    paths: list[str] = []
    real_fsync = os.fsync

    def noting_fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", noting_fsync)
    return paths
