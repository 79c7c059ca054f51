"""A session's ACLs against a real ZooKeeper (steward.ha.acl): what it creates is closed to
anyone without the cluster's credential, a cluster created world-open (before ACLs, or with
``client.acl=open``) is migrated by the first session with the credential, and a session
without the right credential is refused with a clear error.

The whole cluster of processes, with a job, is tested in tests/e2e/cluster/test_zookeeper_acl.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from acl_probes import assert_closed, stranger_client, tree, world_open
from steward.errors import ConfigurationError
from steward.ha.acl import AclMode, DigestCredential, ZooKeeperAccess, create_digest_file
from steward.ha.session import Session
from support import ZK_TEST_ROOT

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 4.0


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"{ZK_TEST_ROOT}/{cluster_id}"


@pytest.fixture
def credential(tmp_path: Path) -> DigestCredential:
    return create_digest_file(tmp_path / "zookeeper.digest")


def _session(quorum: str, root: str, access: ZooKeeperAccess) -> Session:
    return Session(quorum, root, session_timeout=SESSION_TIMEOUT, name="acl", access=access)


def _creator(credential: DigestCredential) -> ZooKeeperAccess:
    return ZooKeeperAccess(AclMode.CREATOR, credential)


@pytest.fixture
def stranger(zk_quorum: str) -> Iterator[KazooClient]:
    """A kazoo client without the cluster's credential."""
    with stranger_client(zk_quorum) as client:
        yield client


def test_what_a_session_creates_is_closed_to_a_client_without_the_credential(
    zk_quorum: str, root: str, credential: DigestCredential, stranger: KazooClient
) -> None:
    with _session(zk_quorum, root, _creator(credential)) as session:
        session.client.create(f"{session.layout.job('j1')}/status", b"{}", makepath=True)
        session.client.create(session.layout.taskmanager("tm-1"), b"{}", ephemeral=True)
        txn = session.client.transaction()
        txn.create(session.layout.result("j1"), b"{}")
        txn.commit()
        paths = tree(session.client, root)
        assert len(paths) >= 10
        assert not [path for path in paths if world_open(session.client, path)]
        for path in paths:
            assert_closed(stranger, path)
        # The znode above the root is shared by clusters with other credentials: open.
        assert world_open(stranger, ZK_TEST_ROOT)


def test_a_world_open_cluster_is_migrated_by_the_first_session_with_the_credential(
    zk_quorum: str,
    root: str,
    credential: DigestCredential,
    stranger: KazooClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a cluster's state created the old way: world-open, with a job and a result
    with _session(zk_quorum, root, ZooKeeperAccess(AclMode.OPEN)) as old:
        old.client.create(f"{old.layout.job('j1')}/status", b"{}", makepath=True)
        old.client.create(old.layout.result("j1"), b"{}")
        before = tree(old.client, root)
        assert all(world_open(old.client, path) for path in before)
    # When a session with the credential starts on it
    with caplog.at_level(logging.WARNING, logger="steward.ha.acl"):
        session = _session(zk_quorum, root, _creator(credential)).start()
    try:
        # Then every znode is closed, the data kept, and the migration said how much it did
        paths = tree(session.client, root)
        assert set(before) <= set(paths)
        assert not [path for path in paths if world_open(session.client, path)]
        assert session.client.get(session.layout.result("j1"))[0] == b"{}"
        assert f"protected={len(before)}" in caplog.text
        assert credential.password not in caplog.text
        for path in before:
            with pytest.raises(NoAuthError):
                stranger.get(path)
    finally:
        session.close()
    # And the next session finds nothing to migrate (the root, set last, is protected)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="steward.ha.acl"):
        _session(zk_quorum, root, _creator(credential)).start().close()
    assert "creator ACL set" not in caplog.text


def test_an_interrupted_migration_is_finished_by_the_next_session(
    zk_quorum: str, root: str, credential: DigestCredential, stranger: KazooClient
) -> None:
    # Given a world-open cluster whose migration stopped half-way (a leaf done, the root not)
    with _session(zk_quorum, root, ZooKeeperAccess(AclMode.OPEN)) as old:
        old.client.create(old.layout.result("j1"), b"{}")
    admin = KazooClient(hosts=zk_quorum, auth_data=credential.auth_data)
    admin.start(timeout=15)
    try:
        admin.set_acls(f"{root}/results/j1", credential.acl)
    finally:
        admin.stop()
        admin.close()
    # When a session with the credential starts, the rest is done
    with _session(zk_quorum, root, _creator(credential)) as session:
        paths = tree(session.client, root)
        assert not [path for path in paths if world_open(session.client, path)]
    with pytest.raises(NoAuthError):
        stranger.get_children(root)


@pytest.mark.parametrize("access", ["none", "wrong"])
def test_a_session_without_the_clusters_credential_is_refused_clearly(
    zk_quorum: str, root: str, credential: DigestCredential, tmp_path: Path, access: str
) -> None:
    with _session(zk_quorum, root, _creator(credential)):
        pass
    if access == "none":
        other = ZooKeeperAccess(AclMode.OPEN)
        hint = "this process has none"
    else:
        other = _creator(create_digest_file(tmp_path / "wrong.digest"))
        hint = "is not the one that protects it"
    with pytest.raises(ConfigurationError, match="protected by another credential") as caught:
        _session(zk_quorum, root, other).start()
    assert hint in str(caught.value)
    assert caught.value.key == "high-availability.zookeeper.digest-file"


def test_an_open_session_keeps_an_open_cluster_open(
    zk_quorum: str, root: str, stranger: KazooClient
) -> None:
    with _session(zk_quorum, root, ZooKeeperAccess(AclMode.OPEN)) as session:
        session.client.create(session.layout.result("j1"), b"{}")
    assert stranger.get(f"{root}/results/j1")[0] == b"{}"
    acls, _stat = stranger.get_acls(root)
    assert acls == OPEN_ACL_UNSAFE
