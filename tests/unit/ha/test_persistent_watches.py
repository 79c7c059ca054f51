"""Persistent watches on a kazoo client: the wire format of the two requests, the dispatch of
watch events to the watchers of a path and of its ancestors, and the kazoo internals both rely
on, pinned: a kazoo that changes them fails here, not in a standby that silently hears
nothing."""

from __future__ import annotations

import inspect
import struct

import pytest
from kazoo.client import KazooClient
from kazoo.protocol import connection as kazoo_connection
from kazoo.protocol.serialization import int_int_struct, write_string
from kazoo.protocol.states import EVENT_TYPE_MAP, EventType, WatchedEvent

from steward.ha.persistent_watches import AddWatch, PersistentWatches, RemoveWatches

CHANGED, CREATED = 3, 1  # ZooKeeper's EventType codes
SYNC_CONNECTED = 3


def _event(kind: int, path: str) -> bytes:
    """A watch event's body as the server sends it after its reply header."""
    return bytes(int_int_struct.pack(kind, SYNC_CONNECTED) + write_string(path))


@pytest.fixture
def client() -> KazooClient:
    return KazooClient(hosts="127.0.0.1:1")  # never started: no connection is made


def test_add_watch_is_opcode_106_with_the_path_and_the_mode() -> None:
    request = AddWatch("/a/b", 1)
    assert request.type == 106
    assert bytes(request.serialize()) == struct.pack("!i4si", 4, b"/a/b", 1)
    assert AddWatch.deserialize(b"", 0) is True


def test_remove_watches_is_opcode_18_with_the_path_and_the_watcher_type() -> None:
    request = RemoveWatches("/a", 5)
    assert request.type == 18
    assert bytes(request.serialize()) == struct.pack("!i2si", 2, b"/a", 5)


def test_an_event_reaches_the_watchers_of_its_path_and_ancestors_then_kazoos_own(
    client: KazooClient,
) -> None:
    watches = PersistentWatches(client)
    assert watches.hooked
    seen: dict[str, list[WatchedEvent]] = {"/a": [], "/a/b/c": [], "/ab": [], "/x": []}
    for path, events in seen.items():
        watches._watchers[path] = [events.append]  # as add() registers them, without a server
    one_shot: list[object] = []
    client._data_watchers["/a/b/c"].add(one_shot.append)

    client._connection._read_watch_event(_event(CHANGED, "/a/b/c"), 0)

    assert [(e.type, e.path) for e in seen["/a"]] == [(EventType.CHANGED, "/a/b/c")]
    assert [(e.type, e.path) for e in seen["/a/b/c"]] == [(EventType.CHANGED, "/a/b/c")]
    assert seen["/ab"] == seen["/x"] == []
    # Kazoo's handling ran after: it popped its one-shot watcher of the exact path.
    assert "/a/b/c" not in client._data_watchers


def test_a_chrooted_client_sends_and_dispatches_paths_as_kazoo_does() -> None:
    client = KazooClient(hosts="127.0.0.1:1/root")
    watches = PersistentWatches(client)
    assert watches._chrooted("/jobs") == "/root/jobs"
    seen: list[WatchedEvent] = []
    watches._watchers["/jobs"] = [seen.append]
    client._connection._read_watch_event(_event(CREATED, "/root/jobs/j1"), 0)
    assert [(e.type, e.path) for e in seen] == [(EventType.CREATED, "/jobs/j1")]


def test_the_kazoo_internals_relied_on_are_still_there(client: KazooClient) -> None:
    # The request path: _call(request, async_result) queues any object with type and
    # serialize(); the reply is given to request.deserialize; a request with no "watcher"
    # attribute registers no one-shot watcher.
    assert list(inspect.signature(client._call).parameters) == ["request", "async_object"]
    submit = inspect.getsource(kazoo_connection.ConnectionHandler._submit)
    assert "request.type" in submit and "request.serialize()" in submit
    response = inspect.getsource(kazoo_connection.ConnectionHandler._read_response)
    assert "request.deserialize(buffer, offset)" in response
    assert 'getattr(request, "watcher", None)' in response
    # The events: every watch event goes through _read_watch_event(buffer, offset), which
    # finds one-shot watchers by exact path only.
    socket_read = inspect.getsource(kazoo_connection.ConnectionHandler._read_socket)
    assert "self._read_watch_event(buffer, offset)" in socket_read
    read = client._connection._read_watch_event
    assert list(inspect.signature(read).parameters) == ["buffer", "offset"]
    assert client.handler.async_result() is not None
    assert isinstance(client._state, str)  # a KeeperState, what kazoo's events carry
    assert {code: EVENT_TYPE_MAP[code] for code in (1, 2, 3, 4)} == {
        1: EventType.CREATED,
        2: EventType.DELETED,
        3: EventType.CHANGED,
        4: EventType.CHILD,
    }
    assert client.unchroot("/a") == "/a"
