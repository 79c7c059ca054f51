"""Which servers a session avoids after leaving a silent one (the client never connects here)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from steward.ha.kazoo_connection import Avoidance, handshake_timeout


def test_the_silent_server_is_left_out_until_the_avoidance_stops() -> None:
    quorum = "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    client = KazooClient(hosts=quorum)
    avoidance = Avoidance(client, quorum)

    assert avoidance.avoid(("127.0.0.1", 2182))
    assert client.hosts == [("127.0.0.1", 2181), ("127.0.0.1", 2183)]
    assert avoidance.server == ("127.0.0.1", 2182)

    avoidance.stop()
    assert client.hosts == [("127.0.0.1", 2181), ("127.0.0.1", 2182), ("127.0.0.1", 2183)]
    assert avoidance.server is None


def test_a_name_is_matched_by_the_address_it_resolves_to_and_the_chroot_is_kept() -> None:
    quorum = "localhost:2181,[::1]:2182,127.0.0.2:2181/apps/steward"
    client = KazooClient(hosts=quorum)
    avoidance = Avoidance(client, quorum)

    assert avoidance.avoid(("127.0.0.1", 2181))  # what the socket says of "localhost"
    assert client.hosts == [("::1", 2182), ("127.0.0.2", 2181)]
    assert client.chroot == "/apps/steward"


@pytest.mark.parametrize(
    ("quorum", "server"),
    [
        ("127.0.0.1:2181", ("127.0.0.1", 2181)),  # a standalone server: no other to go to
        ("127.0.0.1:2181,127.0.0.1:2182", ("127.0.0.1", 2183)),  # not one of them
    ],
)
def test_nothing_changes_when_avoiding_would_leave_no_server_or_avoid_none(
    quorum: str, server: tuple[str, int]
) -> None:
    client = KazooClient(hosts=quorum)
    before = list(client.hosts)
    avoidance = Avoidance(client, quorum)

    assert not avoidance.avoid(server)
    assert client.hosts == before
    assert avoidance.server is None


def test_a_handshake_waits_a_fifth_of_the_session_at_least_two_seconds() -> None:
    assert handshake_timeout(10.0) == 2.0
    assert handshake_timeout(30.0) == 6.0
    assert handshake_timeout(1.5) == 1.5
