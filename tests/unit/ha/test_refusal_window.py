"""The crash detector's decision rule and its probe, on real sockets."""

from __future__ import annotations

import socket

from steward.ha.crash_detection import ProbeOutcome, RefusalWindow, probe
from steward.wire.records import LeaderInfo

LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:9", epoch=3)
REFUSED, ACCEPTED, UNKNOWN = ProbeOutcome.REFUSED, ProbeOutcome.ACCEPTED, ProbeOutcome.UNKNOWN


def test_dead_only_after_refusals_spanning_the_whole_window() -> None:
    window = RefusalWindow(refused_for=1.0, min_refusals=3)
    assert not window.observe(LEADER, REFUSED, 0.0)
    assert not window.observe(LEADER, REFUSED, 0.5)
    assert window.observe(LEADER, REFUSED, 1.0)


def test_a_full_window_of_too_few_refusals_is_not_enough() -> None:
    window = RefusalWindow(refused_for=1.0, min_refusals=3)
    assert not window.observe(LEADER, REFUSED, 0.0)
    assert not window.observe(LEADER, REFUSED, 5.0)
    assert window.observe(LEADER, REFUSED, 5.1)


def test_anything_but_a_refusal_starts_the_window_over() -> None:
    for interruption in (ACCEPTED, UNKNOWN):
        window = RefusalWindow(refused_for=1.0, min_refusals=3)
        window.observe(LEADER, REFUSED, 0.0)
        window.observe(LEADER, REFUSED, 0.5)
        window.observe(LEADER, interruption, 0.6)
        assert not window.observe(LEADER, REFUSED, 1.0)
        assert not window.observe(LEADER, REFUSED, 1.5)
        assert window.observe(LEADER, REFUSED, 2.0)


def test_the_window_is_open_from_the_first_refusal_until_anything_else() -> None:
    # The detector probes at its quick pace while the window is open: the verdict then comes
    # refused_for after the first refusal, not a steady probe interval later.
    window = RefusalWindow(refused_for=1.0, min_refusals=3)
    assert not window.open
    window.observe(LEADER, REFUSED, 0.0)
    assert window.open
    window.observe(LEADER, ACCEPTED, 0.1)
    assert not window.open


def test_a_new_leader_or_epoch_starts_the_window_over() -> None:
    window = RefusalWindow(refused_for=1.0, min_refusals=3)
    window.observe(LEADER, REFUSED, 0.0)
    window.observe(LEADER, REFUSED, 0.5)
    successor = LEADER.model_copy(update={"epoch": 4})
    assert not window.observe(successor, REFUSED, 1.0)
    assert not window.observe(successor, REFUSED, 1.5)
    assert window.observe(successor, REFUSED, 2.0)


def test_probe_tells_a_refused_port_from_a_listening_one() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        port = listening.getsockname()[1]
        assert probe(f"http://127.0.0.1:{port}", timeout=1.0) is ACCEPTED
    # The port is closed now: nothing listens there.
    assert probe(f"http://127.0.0.1:{port}", timeout=1.0) is REFUSED


def test_probe_of_an_unusable_address_is_unknown_never_refused() -> None:
    assert probe("http://no-such-host.invalid:8081", timeout=0.5) is UNKNOWN
    assert probe("not a url", timeout=0.5) is UNKNOWN
    assert probe("http://127.0.0.1:99999", timeout=0.5) is UNKNOWN
