"""Fixtures of the real-Spark-cluster tests: a standalone Spark Master and Worker and a Spark
Connect server (both from :mod:`steward.testing`); the Steward cluster of processes is
``process_cluster`` (tests/e2e/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.testing.connect_server import ConnectServer, connect_server
from steward.testing.standalone import StandaloneCluster, standalone_cluster


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
