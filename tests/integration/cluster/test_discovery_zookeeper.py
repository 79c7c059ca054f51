"""A client finds the JobManagers through ZooKeeper: the leader first, then every contender,
with a read-only look that creates nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE

from acl_probes import started_client
from steward.client.discovery import discover_addresses
from steward.config import Configuration, load
from steward.errors import ClusterUnreachableError, ConfigurationError
from steward.ha.acl import DIGEST_FILE_KEY, create_digest_file
from steward.ha.layout import Layout
from steward.wire.records import ContenderInfo, LeaderInfo
from support import ZK_TEST_ROOT

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def zk(zk_quorum: str) -> Iterator[KazooClient]:
    with started_client(zk_quorum) as client:
        yield client


def config_for(quorum: str, cluster_id: str, **keys: str) -> Configuration:
    return load(
        overrides={
            "high-availability.zookeeper.quorum": quorum,
            "high-availability.zookeeper.root": ZK_TEST_ROOT,
            "high-availability.cluster-id": cluster_id,
            **keys,
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


def test_a_protected_cluster_is_found_with_its_credential_and_named_without_it(
    zk_quorum: str, cluster_id: str, tmp_path: Path
) -> None:
    # Given a cluster whose state only its credential may read
    digest = tmp_path / "zookeeper.digest"
    credential = create_digest_file(digest)
    layout = Layout(f"{ZK_TEST_ROOT}/{cluster_id}")
    owner = KazooClient(hosts=zk_quorum, auth_data=credential.auth_data, default_acl=credential.acl)
    owner.start(timeout=15)
    try:
        owner.ensure_path(ZK_TEST_ROOT, acl=OPEN_ACL_UNSAFE)  # shared by every test: open
        leader = LeaderInfo(contender="jm-a", address="127.0.0.1:18081", epoch=1)
        owner.create(layout.leader_info, leader.to_json(), makepath=True)
        owner.ensure_path(layout.leader_latch)
    finally:
        owner.stop()
        owner.close()
    # When a client with the credential looks it up, it finds the leader
    found = discover_addresses(
        config_for(zk_quorum, cluster_id, **{DIGEST_FILE_KEY: str(digest)}), tmp_path
    )
    assert found == ["http://127.0.0.1:18081"]
    # And a client without it is told why and what to set, not "no JobManager"
    with pytest.raises(ConfigurationError, match="protected by another credential") as caught:
        discover_addresses(config_for(zk_quorum, cluster_id), tmp_path)
    assert DIGEST_FILE_KEY in str(caught.value)
    assert "rest.address" in str(caught.value)
    assert credential.password not in str(caught.value)
