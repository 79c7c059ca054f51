"""Fixtures shared by the end-to-end tests: ``process_cluster``, a cluster of real Steward
processes (none started yet) on the session's standalone ZooKeeper, stopped after the test.

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
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id)
    try:
        yield cluster
    finally:
        cluster.stop()
