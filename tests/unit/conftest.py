"""Fixtures of the unit tests: ``pipe``, a real OS pipe (read end, write end), both ends closed
after the test unless the test closed them itself."""

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
