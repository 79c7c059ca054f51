"""A job's ``initialize`` hook runs in a child of the leader: its disk use is bounded there too.

A hook that prints in a loop must not fill the JobManager's disk; its log keeps the beginning,
one line counting what was dropped, and the end, within ``taskmanager.attempt-log.max-size``.
Its folder goes ``taskmanager.workdir.retention`` after it ended, as an attempt's does.
"""

from __future__ import annotations

import os
import time

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


HOOK = b"def initialize(ctx):\n    print('hook ran')\n\ndef main(ctx):\n    return 1\n"


def test_with_retention_zero_a_hook_folder_goes_once_the_hook_ended(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"taskmanager.workdir.retention": "0"})
    cluster.submitted(leader, "job-hooked", source=HOOK, filename="stw_hooked_once.py")
    cluster.wait_state(leader, "job-hooked", "SCHEDULED")
    folder = cluster.workdir / "jm-1" / "hooks" / "job-hooked"
    wait_until(lambda: not folder.exists(), 30, message="the hook's folder removed")


def test_hook_folders_past_the_retention_are_swept_newer_ones_kept(
    cluster: JobManagerCluster,
) -> None:
    hooks = cluster.workdir / "jm-1" / "hooks"
    old, recent = hooks / "job-old" / "initialize-1", hooks / "job-recent" / "initialize-1"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "initialize.log").write_text("from an earlier leader\n")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    leader = cluster.start_leader("jm-1", **{"taskmanager.workdir.retention": "1h"})
    # Any hook's end sweeps (the first time in a term, then at most once a minute).
    cluster.submitted(leader, "job-hooked", source=HOOK, filename="stw_hooked_sweep.py")
    cluster.wait_state(leader, "job-hooked", "SCHEDULED")
    wait_until(lambda: not (hooks / "job-old").exists(), 30, message="the old folder swept")
    assert (recent / "initialize.log").exists()
    assert (hooks / "job-hooked").is_dir()  # its own, just made
