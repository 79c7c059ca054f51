"""The testing kit's helpers under the short import path tests use: ``from support import
wait_until`` (tests/ is on sys.path through its conftest). They live in :mod:`steward.testing`
(deadlines instead of sleeps, free ports, the tests' ZooKeeper root); nothing is defined here.
"""

from __future__ import annotations

from steward.testing.ports import free_port, free_zookeeper_port
from steward.testing.processes import TEST_ROOT as ZK_TEST_ROOT
from steward.testing.waiting import wait_until

__all__ = ["ZK_TEST_ROOT", "free_port", "free_zookeeper_port", "wait_until"]
