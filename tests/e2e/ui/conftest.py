"""Fixtures of the web UI tests: one real cluster and one headless Chromium per module.

The cluster is two JobManagers and one TaskManager (two slots) on the session's ZooKeeper, with
authentication on (the kit's admin token signs in). The browser is Debian's Chromium
(``/usr/bin/chromium``) driven by playwright, never a browser playwright downloads; without it
the tests are skipped with the reason (CI installs it: scripts/setup.sh).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from e2e.ui.browser import launch
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CANCEL_GRACE = "2s"


@pytest.fixture(scope="module")
def ui_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    """jm-1 (the leader), jm-2 (a standby) and tm-1, ready."""
    with ProcessCluster(
        tmp_path_factory.mktemp("ui"),
        zookeeper.connect_string,
        f"t-ui-{secrets.token_hex(4)}",
        extra={"jobmanager.cancel-grace": CANCEL_GRACE},
    ) as cluster:
        cluster.start_jobmanager("jm-1")
        cluster.wait_ready(taskmanagers=0)
        standby = cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=2)
        cluster.wait_ready(taskmanagers=1)
        wait_until(lambda: _ready(cluster, standby), 30, "the standby is ready")
        yield cluster


def _ready(cluster: ProcessCluster, proc: Proc) -> bool:
    import httpx

    try:
        answer = httpx.get(proc.address + "/readyz", timeout=2, verify=cluster.tls.context)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launch() as opened:
        yield opened


@pytest.fixture
def token() -> str:
    return kit_admin_token()


@pytest.fixture
def standby(ui_cluster: ProcessCluster) -> Proc:
    """A JobManager that is not the leader (the UI works on a standby alike)."""
    leader = ui_cluster.leader()
    return next(p for p in ui_cluster.jobmanagers() if p.alive() and p is not leader)
