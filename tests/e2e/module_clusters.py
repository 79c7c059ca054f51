"""One cluster for a module's tests (its ``shared_cluster`` fixture, which the ``cluster``
fixture of tests/e2e/conftest.py checks alive around each test): for tests that tolerate each
other, that is none stops a member, each uses job ids and tokens of its own and waits for its
jobs to end. A cluster per test costs a JobManager's start (~1.6 s CPU) and a TaskManager's
(~1.2 s) each time (docs/performance.md, "Start-up cost").
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator, Mapping

import pytest

from steward.testing.processes import ProcessCluster
from steward.zookeeper.managed import ManagedEnsemble


@contextlib.contextmanager
def module_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    zookeeper: ManagedEnsemble,
    name: str,
    *,
    jobmanagers: int = 1,
    slots: int = 2,
    extra: Mapping[str, str] | None = None,
) -> Iterator[ProcessCluster]:
    """``jobmanagers`` JobManagers, ``jm-1`` the leader (started first, the others once it
    leads), and TaskManager ``tm-1`` with ``slots`` slots; every JobManager ready. Stopped at
    the end of the block."""
    workdir = tmp_path_factory.mktemp(f"{name}-cluster")
    cluster_id = f"t-{name}-{secrets.token_hex(4)}"
    with ProcessCluster(workdir, zookeeper.connect_string, cluster_id, extra=extra) as cluster:
        first = cluster.start_jobmanager("jm-1")
        assert cluster.wait_ready(taskmanagers=0) is first
        for number in range(2, jobmanagers + 1):
            cluster.start_jobmanager(f"jm-{number}")
        cluster.start_taskmanager("tm-1", slots)
        cluster.wait_ready(taskmanagers=1)
        cluster.wait_all_ready()
        yield cluster
