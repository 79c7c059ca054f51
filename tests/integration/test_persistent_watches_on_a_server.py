"""Persistent recursive watches on a real ZooKeeper 3.9 through kazoo 2.11 (which has no
``add_watch``): one watch hears every change below its path and nothing beside it, and the
server's watch lives as long as one watcher of its path does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.protocol.states import EventType, WatchedEvent

from steward.ha.session import Session
from steward.zookeeper.managed import ManagedEnsemble
from support import ZK_TEST_ROOT, server_watches, wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def session(zk_quorum: str, cluster_id: str) -> Iterator[Session]:
    with Session(zk_quorum, f"{ZK_TEST_ROOT}/{cluster_id}", name="watcher") as session:
        yield session


def _server_watches(zookeeper: ManagedEnsemble) -> int:
    (port,) = zookeeper.client_ports.values()
    return server_watches(port)


def test_one_watch_hears_every_change_below_its_path_and_nothing_beside_it(
    session: Session,
) -> None:
    client, root = session.client, session.layout.root
    client.ensure_path(f"{root}/tree")
    seen: list[WatchedEvent] = []
    session.persistent_watches.add(f"{root}/tree", seen.append)

    client.create(f"{root}/tree/a/b", b"1", makepath=True)
    client.set(f"{root}/tree/a/b", b"2")
    client.create(f"{root}/treeless", b"")  # beside the watched path: not heard
    client.delete(f"{root}/tree/a", recursive=True)

    wanted = [
        (EventType.CREATED, f"{root}/tree/a"),
        (EventType.CREATED, f"{root}/tree/a/b"),
        (EventType.CHANGED, f"{root}/tree/a/b"),
        (EventType.DELETED, f"{root}/tree/a/b"),
        (EventType.DELETED, f"{root}/tree/a"),
    ]
    wait_until(lambda: len(seen) >= len(wanted), 10, "every change heard")
    assert [(event.type, event.path) for event in seen] == wanted


def test_the_servers_watch_goes_with_the_last_watcher_of_its_path(
    session: Session, zookeeper: ManagedEnsemble
) -> None:
    path = f"{session.layout.root}/tree"
    session.client.ensure_path(path)
    before = _server_watches(zookeeper)
    first: list[WatchedEvent] = []
    second: list[WatchedEvent] = []
    watches = session.persistent_watches
    watches.add(path, first.append)
    watches.add(path, second.append)
    watches.add(path, second.append)  # again, as after a reconnect: still one watcher
    assert _server_watches(zookeeper) == before + 1

    watches.remove(path, first.append)
    assert _server_watches(zookeeper) == before + 1
    session.client.create(f"{path}/x")
    wait_until(lambda: len(second) == 1, 10, "the remaining watcher heard the creation")
    assert first == []

    watches.remove(path, second.append)
    assert _server_watches(zookeeper) == before
    assert watches.paths == []
