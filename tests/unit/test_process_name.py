"""A Steward process's kernel name (``steward.process_name``), read back from /proc in a
process of its own (naming the test's own process would rename pytest's)."""

from __future__ import annotations

import subprocess
import sys

import pytest

NAME_AND_READ = """
import sys
from steward.process_name import name_this_process
assert name_this_process(sys.argv[1])
print(open("/proc/self/comm").read().strip())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_NAME) is Linux's")
@pytest.mark.parametrize(
    ("asked", "shown"),
    [("steward-jm", "steward-jm"), ("steward-runner-of-attempts", "steward-runner-")],
)
def test_the_process_goes_by_the_name_given_cut_to_the_kernels_15_bytes(
    asked: str, shown: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NAME_AND_READ, asked],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == shown
