"""Fixtures of the incident tests: a process cluster on the 3-server ZooKeeper (the one on the
standalone server is ``process_cluster``, tests/e2e/conftest.py), a kazoo view of its
namespace, and the ground-truth log of its pipelines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.incidents.truth import GroundTruth
from e2e.incidents.zkview import ZkView
from steward.testing.processes import ProcessCluster
from support import ZK_TEST_ROOT


@pytest.fixture
def cluster3(tmp_path: Path, zk_quorum3: str, cluster_id: str) -> Iterator[ProcessCluster]:
    """A process cluster (no processes yet) on the session's 3-server ensemble."""
    with ProcessCluster(tmp_path, zk_quorum3, cluster_id) as processes:
        yield processes


@pytest.fixture
def zk_view(zk_quorum: str, cluster_id: str, process_cluster: ProcessCluster) -> Iterator[ZkView]:
    options = process_cluster.zookeeper_access.kazoo_options()
    with ZkView(zk_quorum, f"{ZK_TEST_ROOT}/{cluster_id}", options) as view:
        yield view


@pytest.fixture
def zk_view3(zk_quorum3: str, cluster_id: str, cluster3: ProcessCluster) -> Iterator[ZkView]:
    options = cluster3.zookeeper_access.kazoo_options()
    with ZkView(zk_quorum3, f"{ZK_TEST_ROOT}/{cluster_id}", options) as view:
        yield view


@pytest.fixture
def truth(tmp_path: Path) -> Iterator[GroundTruth]:
    with GroundTruth(tmp_path / "truth.jsonl") as ground_truth:
        yield ground_truth
