"""Fixtures of the partition tests: a private network of namespaces with its own ZooKeeper.

``partitioned`` builds, for one test, the namespaces (see network.py), a ZooKeeper server in
its own namespace, and an empty :class:`NetnsCluster`; the test starts the JobManagers and
TaskManagers it needs. Everything (processes, then namespaces) goes in the finally, whatever
the test did. Without root, CAP_NET_ADMIN or ``ip`` the tests skip, saying why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.partition.netns_cluster import NamespacedZooKeeper, NetnsCluster
from e2e.partition.network import Network, NetworkUnavailableError, Observer
from support import ZK_TEST_ROOT


@pytest.fixture
def partitioned(tmp_path: Path, cluster_id: str) -> Iterator[NetnsCluster]:
    """Settings: session timeout 4s (fence-after 2.4s), heartbeat 200ms; tests may edit
    ``cluster.settings`` before starting processes."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (CAP_NET_ADMIN)")
    try:
        network = Network()
    except NetworkUnavailableError as exc:
        pytest.skip(str(exc))
    observer = Observer(network)
    zookeeper: NamespacedZooKeeper | None = None
    cluster: NetnsCluster | None = None
    try:
        zookeeper = NamespacedZooKeeper(network, observer, tmp_path / "zookeeper")
        cluster = NetnsCluster(tmp_path, network, observer, zookeeper.connect_string, cluster_id)
        assert cluster.settings["high-availability.zookeeper.root"] == ZK_TEST_ROOT
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        if zookeeper is not None:
            zookeeper.stop()
        observer.close()
        network.close()
