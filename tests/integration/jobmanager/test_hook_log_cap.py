"""A job's ``initialize`` hook runs in a child of the leader: its output is capped there too.

A hook that prints in a loop must not fill the JobManager's disk; its log keeps the beginning,
one line counting what was dropped, and the end, within ``taskmanager.attempt-log.max-size``.
"""

from __future__ import annotations

import pytest
from jobmanager_harness import JobManagerCluster

from support import wait_until

pytestmark = pytest.mark.zookeeper

CAP = 64 * 1024
FLOODING_HOOK = b"""
import sys

def initialize(ctx):
    print("first line of the hook", flush=True)
    line = "x" * 1023 + "\\n"
    for _ in range(8 * 1024):  # 8 MiB
        sys.stdout.write(line)
    print("last line of the hook", flush=True)

def main(ctx):
    return 1
"""


def test_a_flooding_initialize_hook_leaves_a_capped_log(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1", **{"taskmanager.attempt-log.max-size": str(CAP)})
    cluster.submitted(leader, "job-flood", source=FLOODING_HOOK, filename="stw_flood_hook.py")
    # The hook finished: the job moved on to wait for a TaskManager.
    cluster.wait_state(leader, "job-flood", "SCHEDULED")
    (log,) = (cluster.workdir / "jm-1" / "hooks" / "job-flood").glob("initialize-*/initialize.log")

    # The capper writes the end of the output after the hook's process is gone.
    def complete() -> bytes | None:
        data = log.read_bytes()
        return data if b"last line of the hook" in data else None

    text = wait_until(complete, 30, message="the hook's last line in its log")
    assert len(text) <= CAP
    assert b"first line of the hook" in text
    assert b"bytes dropped" in text
    assert b"last line of the hook" in text
