"""ZooKeeper's multiRead through ``zk.read_many``, against the real server (3.9.5): existing,
missing and mixed batches, a batch split by its request's bytes, answers larger than
``jute.maxbuffer``, and the fallback to pipelined gets when the server does not know the
request (an opcode no server knows stands in for a server older than 3.6)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from steward.errors import ZooKeeperUnavailableError
from steward.ha.kazoo_handler import PollHandler
from steward.store import multiread, zk

pytestmark = pytest.mark.zookeeper

_MAXBUFFER = 0xFFFFF
"""The server's ``jute.maxbuffer`` (its default, which the test ZooKeeper keeps)."""


@pytest.fixture
def client(zk_quorum: str, zk_root: str) -> Iterator[KazooClient]:
    """A client chrooted at the test's root (``read_many`` must prefix the chroot itself)."""
    setup = KazooClient(zk_quorum, handler=PollHandler())
    setup.start()
    setup.ensure_path(zk_root)
    setup.stop()
    setup.close()
    chrooted = KazooClient(zk_quorum + zk_root, handler=PollHandler())
    chrooted.start()
    yield chrooted
    chrooted.stop()
    chrooted.close()


def _states(client: KazooClient) -> list[str]:
    seen: list[str] = []
    client.add_listener(seen.append)
    return seen


def test_existing_missing_and_mixed_batches_answer_data_and_stat_in_order(
    client: KazooClient,
) -> None:
    client.create("/r/a", b"A" * 200, makepath=True)
    client.create("/r/empty", b"")
    client.set("/r/a", b"B" * 200)  # version 1

    existing = zk.read_many(client, ["/r/a", "/r/empty"])
    missing = zk.read_many(client, ["/r/gone", "/nowhere/x"])
    mixed = zk.read_many(client, ["/r/gone", "/r/a", "/r/gone/deeper", "/r/empty"])

    assert existing == [client.get("/r/a"), (b"", client.get("/r/empty")[1])]
    assert existing[0] is not None and existing[0][1].version == 1
    assert missing == [None, None]
    assert mixed == [None, existing[0], None, existing[1]]


def test_children_of_existing_missing_and_leaf_nodes_answer_sorted_in_order(
    client: KazooClient,
) -> None:
    for name in ("c", "a", "b"):
        client.create(f"/kids/{name}", b"", makepath=True)

    found = zk.children_many(client, ["/kids", "/kids/gone", "/kids/a"])

    assert found == [["a", "b", "c"], [], []]


def test_many_batches_answer_every_path_in_order(client: KazooClient) -> None:
    paths = [f"/many/{index:04d}" for index in range(250)]
    for path in paths[::2]:
        client.create(path, path.encode(), makepath=True)

    found = zk.read_many(client, paths)  # three multiReads of at most 100

    assert [None if f is None else f[0] for f in found] == [
        path.encode() if index % 2 == 0 else None for index, path in enumerate(paths)
    ]


def test_a_batch_over_the_servers_maxbuffer_is_split_by_bytes(
    client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [f"/long/{index:03d}-{'p' * 3000}" for index in range(400)]  # 1.2 MB of paths
    client.create(paths[7], b"seven", makepath=True)
    monkeypatch.setattr(zk, "MULTIREAD_BATCH", 1000)  # the count bound alone would send one
    states = _states(client)

    found = zk.read_many(client, paths)

    assert found[7] is not None and found[7][0] == b"seven"
    assert sum(f is not None for f in found) == 1
    assert states == []  # never a dropped connection


def test_an_unbounded_request_over_maxbuffer_is_dropped_by_the_server(
    client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why MULTIREAD_BYTES exists: the server closes the connection of a request that large."""
    paths = [f"/long/{index:03d}-{'p' * 3000}" for index in range(400)]
    assert multiread.request_size(paths) > _MAXBUFFER
    monkeypatch.setattr(zk, "MULTIREAD_BATCH", 1000)
    monkeypatch.setattr(zk, "MULTIREAD_BYTES", 10 * _MAXBUFFER)

    with pytest.raises(ZooKeeperUnavailableError):
        zk.read_many(client, paths)


def test_answers_larger_than_maxbuffer_arrive_whole(client: KazooClient) -> None:
    big = [f"/big/{index}" for index in range(3)]
    for index, path in enumerate(big):
        client.create(path, bytes([65 + index]) * 1_000_000, makepath=True)
    states = _states(client)

    found = zk.read_many(client, big)  # one answer of 3 MB

    assert [None if f is None else f[0] for f in found] == [
        bytes([65 + index]) * 1_000_000 for index in range(3)
    ]
    assert states == []


def test_a_server_without_the_request_is_read_with_pipelined_gets_from_then_on(
    client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.create("/old/a", b"A", makepath=True)
    monkeypatch.setattr(multiread.MultiRead, "type", 99)  # no server knows opcode 99
    sent: list[int] = []
    send = multiread.send
    monkeypatch.setattr(multiread, "send", lambda c, p, op: sent.append(len(p)) or send(c, p, op))

    first = zk.read_many(client, ["/old/a", "/old/gone"])  # UNIMPLEMENTED, then the gets
    second = zk.read_many(client, ["/old/gone", "/old/a"])
    children = zk.children_many(client, ["/old", "/old/gone"])

    assert [None if f is None else f[0] for f in first] == [b"A", None]
    assert [None if f is None else f[0] for f in second] == [None, b"A"]
    assert children == [["a"], []]
    assert sent == [2]  # the first call tried once; the later ones went straight to the gets
    assert not zk.multiread_supported(client)


def test_children_on_a_server_without_the_request_fall_back_too(
    client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.create("/old/x/y", b"", makepath=True)
    monkeypatch.setattr(multiread.MultiRead, "type", 99)

    assert zk.children_many(client, ["/old/x", "/old/x/y", "/old/none"]) == [["y"], [], []]
    assert not zk.multiread_supported(client)
