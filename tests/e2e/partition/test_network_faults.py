"""The chaos suite's slow, lossy link does what it says, on real namespaces: it drops its share
of the packets, and the link is whole again once healed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from e2e.partition.network import Network, NetworkUnavailableError, Observer, can_drop_randomly

PORT = 9999
SENT = 600
PACE = 0.0005

RECEIVER = f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", {PORT}))
print("ready", flush=True)
s.settimeout(1.5)
count = 0
try:
    while True:
        s.recv(16)
        count += 1
except OSError:
    pass
print(count)
"""


@pytest.fixture
def network() -> Iterator[Network]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    try:
        made = Network()
    except NetworkUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        yield made
    finally:
        made.close()


def _delivered(network: Network, observer: Observer, name: str) -> int:
    """Datagrams of ``SENT`` sent from the hub that reach member ``name``."""
    receiver = subprocess.Popen(
        [*network.exec_prefix(name), sys.executable, "-c", RECEIVER],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:

        def send() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for _ in range(SENT):
                    sock.sendto(b"x", (network.members[name], PORT))
                    # Paced (a rate, not a wait for anything): a burst would overflow the
                    # receiver's socket buffer, a loss that is not the link's.
                    time.sleep(PACE)

        assert receiver.stdout is not None
        assert receiver.stdout.readline().strip() == "ready"  # it listens: send
        observer.run(send)
        out, _ = receiver.communicate(timeout=30)
    finally:
        receiver.kill()
    return int(out.strip())


@pytest.mark.skipif(not can_drop_randomly(), reason="no nft (apt-get install -y nftables)")
def test_a_lossy_link_drops_its_share_and_is_whole_again_when_healed(network: Network) -> None:
    network.add("far")
    observer = Observer(network)
    try:
        network.throttle("far", rate="100mbit", latency="1s", loss_percent=30)
        lossy = _delivered(network, observer, "far")
        network.unthrottle("far")
        whole = _delivered(network, observer, "far")
    finally:
        observer.close()
    assert whole == SENT
    assert 0.55 * SENT < lossy < 0.85 * SENT, lossy  # 70 % expected
