"""The poll-based ``select`` kazoo's connection thread waits with (steward.ha.kazoo_handler):
``select.select``'s answers on real sockets, without its limit on descriptor numbers."""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Iterator

import pytest

from steward.ha.kazoo_handler import poll_select


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_nothing_to_read_waits_out_the_timeout_and_answers_nothing(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, _right = pair
    assert poll_select([left], [], [], 0.01) == ([], [], [])


def test_a_socket_with_data_is_readable_and_one_with_buffer_room_writable(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    right.sendall(b"x")
    readable, writable, _ = poll_select([left, right], [left], [], 1.0)
    assert readable == [left]
    assert writable == [left]


def test_a_closed_peer_reads_as_readable(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    right.close()
    assert poll_select([left], [], [], 1.0)[0] == [left]


def test_a_descriptor_past_select_limit_is_waited_on(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 2048:
        pytest.skip(f"descriptors limited to {soft}")
    left, right = pair
    high = os.dup2(left.fileno(), 2000)
    try:
        right.sendall(b"x")
        assert poll_select([high], [], [], 1.0)[0] == [high]
    finally:
        os.close(high)


def test_a_closed_descriptor_is_an_error(pair: tuple[socket.socket, socket.socket]) -> None:
    left, _right = pair
    fd = os.dup(left.fileno())
    os.close(fd)
    with pytest.raises(ValueError):
        poll_select([fd], [], [], 0.01)
