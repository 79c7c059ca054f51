"""A leader cut off from ZooKeeper stops its initialize hooks before its session can expire.

With ``tolerate-suspended-connections`` (the default) a leader keeps its leadership until
kazoo reports LOST, and kazoo reports LOST only when it reconnects: a leader whose only
ZooKeeper server froze, or which a partition cut off, would go on running user code in its
initialize hooks while, once its session has expired on the servers, the next leader runs the
same hooks. Given a leader with a 10 s session and fence-after 2 s running a hook, when its
ZooKeeper server freezes (SIGSTOP: no connection is reset, kazoo notices only after 2/3 of the
session timeout), then the hook is killed within about fence-after, no hook starts while the
leader is cut off, and after the thaw (the same session: nothing was lost) the hook runs again.

These tests freeze a ZooKeeper of their own module, and always thaw it.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import psutil
import pytest
from jobmanager_harness import JobManagerCluster

from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 10.0
FENCE_AFTER = 2.0
KAZOO_NOTICES_AFTER = SESSION_TIMEOUT * 2 / 3
SLOW_HOOK = (
    b"import time\n\ndef initialize(ctx):\n    time.sleep(120)\n\ndef main(ctx):\n    return 3\n"
)


@pytest.fixture
def zk_quorum(frozen_zk: ManagedEnsemble) -> str:
    """Every session of these tests uses the freezable server."""
    return frozen_zk.connect_string


def hook_pids(job_id: str) -> list[int]:
    """This process's children running ``job_id``'s initialize hook (found by their cwd)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if f"/{job_id}/initialize-" in child.cwd():
                found.append(child.pid)
    return found


def test_a_leader_cut_off_from_zookeeper_kills_its_hooks_before_its_session_could_expire(
    cluster: JobManagerCluster, frozen_zk: ManagedEnsemble, tmp_path: Path
) -> None:
    leader = cluster.start_leader(
        "jm-1",
        **{
            "high-availability.zookeeper.session-timeout": f"{SESSION_TIMEOUT:g}s",
            "taskmanager.fence-after": f"{FENCE_AFTER:g}s",
            "jobmanager.initialize-timeout": "60s",
        },
    )
    try:
        cluster.submitted(leader, "job-hook", source=SLOW_HOOK, filename="stw_slow_hook.py")
        first = wait_until(lambda: hook_pids("job-hook"), 20, message="the hook runs")

        frozen_at = time.monotonic()
        frozen_zk.freeze_server(1)
        wait_until(
            lambda: not hook_pids("job-hook"),
            KAZOO_NOTICES_AFTER - 1.0,
            message="the cut-off leader killed its hook",
        )
        killed_after = time.monotonic() - frozen_at
        # Counted from the start of the last round trip that worked: up to one probe period
        # (fence-after / 4) before the freeze.
        assert FENCE_AFTER * 3 / 4 - 0.1 <= killed_after < KAZOO_NOTICES_AFTER - 1.0, killed_after
        assert leader.is_leader  # SUSPENDED is tolerated: the term goes on

        time.sleep(1.0)
        assert hook_pids("job-hook") == [], "a hook started while the leader was cut off"

        frozen_zk.thaw_server(1)
        again = wait_until(lambda: hook_pids("job-hook"), 20, message="the hook runs again")
        assert set(again).isdisjoint(first)
        assert cluster.job(leader, "job-hook")["state"] == "INITIALIZING"
    finally:
        for pid in hook_pids("job-hook"):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
