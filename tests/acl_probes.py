"""What a client without a cluster's ZooKeeper credential can see: the tests of the creator ACL
(the sessions' in tests/integration, a cluster of processes' in tests/e2e) share these.

Import as ``from acl_probes import ...`` (tests/ is on sys.path through its conftest).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError


def stranger_client(quorum: str) -> contextlib.AbstractContextManager[KazooClient]:
    """A kazoo client without any credential, closed after use."""
    return started_client(quorum)


@contextlib.contextmanager
def started_client(quorum: str, **options: Any) -> Iterator[KazooClient]:
    """A started kazoo client (``options``: its credential, say), closed after use."""
    client = KazooClient(hosts=quorum, timeout=10.0, **options)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def tree(client: KazooClient, root: str) -> list[str]:
    """``root`` and every znode below it (read with ``client``'s credential)."""
    paths, pending = [], [root]
    while pending:
        path = pending.pop()
        paths.append(path)
        pending += [f"{path}/{child}" for child in client.get_children(path)]
    return paths


def world_open(client: KazooClient, path: str) -> bool:
    """Whether anyone may do something with ``path`` (an ACL of the ``world`` scheme)."""
    acls, _stat = client.get_acls(path)
    return any(acl.id.scheme == "world" for acl in acls)


def assert_closed(stranger: KazooClient, path: str) -> None:
    """``stranger`` may neither read ``path``, list its children, set it nor create in it."""
    with pytest.raises(NoAuthError):
        stranger.get(path)
    with pytest.raises(NoAuthError):
        stranger.get_children(path)
    with pytest.raises(NoAuthError):
        stranger.set(path, b"x")
    with pytest.raises(NoAuthError):
        stranger.create(f"{path}/intruder", b"x")
