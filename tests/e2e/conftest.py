"""Fixtures shared by the end-to-end tests: ``process_cluster``, a cluster of real Steward
processes (none started yet) on the session's standalone ZooKeeper, stopped after the test;
``cluster``, a module's ``shared_cluster`` checked alive before and after each test.

The processes come from the testing kit (:mod:`steward.testing.processes`); a folder whose
tests need another cluster (a 3-server ZooKeeper, a shared one, network namespaces) defines
it in its own conftest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.testing.processes import ProcessCluster


@pytest.fixture
def process_cluster(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    """A process cluster (no processes yet) on the session's standalone ZooKeeper."""
    with ProcessCluster(tmp_path, zk_quorum, cluster_id) as cluster:
        yield cluster


@pytest.fixture
def cluster(shared_cluster: ProcessCluster) -> Iterator[ProcessCluster]:
    """A module's ``shared_cluster`` (its own fixture: one cluster for tests that tolerate
    each other); after the test, every Steward process must still run."""
    shared_cluster.check_alive()
    yield shared_cluster
    shared_cluster.check_alive()
