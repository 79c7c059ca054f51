"""What the closed-ZooKeeper tests (test_zookeeper_acl*.py) look at a cluster's state with."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NotEmptyError
from kazoo.security import OPEN_ACL_UNSAFE

from acl_probes import assert_closed
from steward.ha.layout import Layout
from steward.testing.processes import ProcessCluster
from support import ZK_TEST_ROOT


def admin_client(cluster: ProcessCluster) -> KazooClient:
    """A kazoo client with the cluster's credential."""
    quorum = cluster.settings["high-availability.zookeeper.quorum"]
    client = KazooClient(hosts=quorum, timeout=10.0, **cluster.zookeeper_access.kazoo_options())
    client.start(timeout=15)
    return client


def cluster_layout(cluster: ProcessCluster) -> Layout:
    """Where the cluster keeps its state in the tests' ZooKeeper."""
    return Layout(f"{ZK_TEST_ROOT}/{cluster.settings['high-availability.cluster-id']}")


def assert_closed_to(stranger: KazooClient, paths: list[str], root: str) -> None:
    """``stranger`` can neither read, re-open nor delete any of ``paths`` (under ``root``)."""
    for path in paths:
        assert_closed(stranger, path)
        with pytest.raises(NoAuthError):
            stranger.set_acls(path, OPEN_ACL_UNSAFE)
        if path == root:
            # Deleting needs DELETE on the parent, which clusters share (open); but the
            # root is never empty, and everything in it is closed.
            with pytest.raises(NotEmptyError):
                stranger.delete(path)
        else:
            with pytest.raises(NoAuthError):
                stranger.delete(path)
