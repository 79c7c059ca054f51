"""A client finds the JobManagers through ZooKeeper: the leader first, then every contender,
with a read-only look that creates nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from steward.client.discovery import discover_addresses
from steward.config import Configuration, load
from steward.errors import ClusterUnreachableError
from steward.ha.layout import Layout
from steward.wire.records import ContenderInfo, LeaderInfo
from support import ZK_TEST_ROOT

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def zk(zk_quorum: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_quorum)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def config_for(quorum: str, cluster_id: str) -> Configuration:
    return load(
        overrides={
            "high-availability.zookeeper.quorum": quorum,
            "high-availability.zookeeper.root": ZK_TEST_ROOT,
            "high-availability.cluster-id": cluster_id,
        },
        environ={},
    )


def test_the_leader_comes_first_then_every_contender(
    zk: KazooClient, zk_quorum: str, cluster_id: str, tmp_path: Path
) -> None:
    # Given two contenders, the second of which leads
    layout = Layout(f"{ZK_TEST_ROOT}/{cluster_id}")
    for name, address in [("jm-a", "http://127.0.0.1:18081"), ("jm-b", "127.0.0.1:18082")]:
        zk.create(
            f"{layout.leader_latch}/latch-",
            ContenderInfo(contender=name, address=address).to_json(),
            sequence=True,
            makepath=True,
        )
    leader = LeaderInfo(contender="jm-b", address="127.0.0.1:18082", epoch=3)
    zk.create(layout.leader_info, leader.to_json(), makepath=True)
    zk.create(f"{layout.leader_latch}/garbage", b"not json")
    # When a client looks them up (from a folder without a local cluster)
    addresses = discover_addresses(config_for(zk_quorum, cluster_id), tmp_path)
    # Then the leader is first, every address once, the unreadable node skipped
    assert addresses == ["http://127.0.0.1:18082", "http://127.0.0.1:18081"]


def test_an_unknown_cluster_is_unreachable_and_nothing_is_created(
    zk: KazooClient, zk_quorum: str, cluster_id: str, tmp_path: Path
) -> None:
    with pytest.raises(ClusterUnreachableError, match="no JobManager is registered"):
        discover_addresses(config_for(zk_quorum, cluster_id), tmp_path)
    assert zk.exists(f"{ZK_TEST_ROOT}/{cluster_id}") is None


def test_no_zookeeper_is_unreachable_within_the_lookup_timeout(tmp_path: Path) -> None:
    config = config_for("127.0.0.1:1", "nobody")
    with pytest.raises(ClusterUnreachableError, match="could not connect to ZooKeeper"):
        discover_addresses(config, tmp_path, zookeeper_timeout=0.5)
