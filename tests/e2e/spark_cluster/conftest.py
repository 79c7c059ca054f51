"""Fixtures of the real-Spark-cluster tests: a Steward cluster of processes, a standalone Spark
Master and Worker, a Spark Connect server (all from :mod:`steward.testing`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.processes import ProcessCluster
from steward.testing.connect_server import ConnectServer, connect_server
from steward.testing.standalone import StandaloneCluster, standalone_cluster


@pytest.fixture
def process_cluster(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    cluster = ProcessCluster(tmp_path, zk_quorum, cluster_id)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def spark_standalone(tmp_path: Path) -> Iterator[StandaloneCluster]:
    """A Master and one Worker (2 cores, 1 GiB) on loopback; killed after the test."""
    with standalone_cluster(tmp_path / "spark", cores=2, memory="1g", timeout=120) as cluster:
        yield cluster


@pytest.fixture
def spark_connect(tmp_path: Path) -> Iterator[ConnectServer]:
    """A Spark Connect server (its Spark on local[2]) on loopback; killed after the test."""
    with connect_server(tmp_path / "connect", cores=2, timeout=180) as server:
        yield server
