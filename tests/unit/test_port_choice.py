"""The two ways Steward picks a loopback port for a server (``zookeeper/layout.py``)."""

from __future__ import annotations

import socket

import pytest

from steward.cluster import launcher
from steward.errors import LocalClusterError, PortInUseError
from steward.zookeeper import layout
from steward.zookeeper.layout import STABLE_PORT_RANGE, kernel_port, port_is_free, stable_port
from support import squat


def test_a_stable_port_is_free_outside_the_ephemeral_range_and_not_excluded() -> None:
    low, high = STABLE_PORT_RANGE
    taken = [stable_port() for _ in range(20)]
    chosen = stable_port(exclude=taken)
    assert low <= chosen < high < 32768
    assert chosen not in taken
    assert port_is_free(chosen)


def test_a_listening_port_is_never_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    with squat(stable_port) as server:
        server.listen()
        busy = server.getsockname()[1]
        monkeypatch.setattr(layout, "STABLE_PORT_RANGE", (busy, busy + 1))
        with pytest.raises(PortInUseError, match=f"between {busy} and {busy + 1}"):
            stable_port()
        # the local cluster says it in its own error
        with pytest.raises(LocalClusterError, match="no free port"):
            launcher.free_port()


def test_the_kernels_choice_can_be_bound_at_once() -> None:
    port = kernel_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind((layout.LOOPBACK, port))
