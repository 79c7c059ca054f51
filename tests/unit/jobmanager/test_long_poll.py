"""The long poll's wake (steward.jobmanager.leader.long_poll): listened to without a thread."""

from __future__ import annotations

from steward.jobmanager.leader.long_poll import Wake


def test_a_listener_is_called_once_when_the_wake_is_set() -> None:
    wake, calls = Wake(), []
    wake.listen(lambda: calls.append("woken"))
    assert calls == []
    wake.set()
    wake.set()
    assert calls == ["woken"]


def test_a_listener_of_a_wake_already_set_is_called_at_once() -> None:
    wake, calls = Wake(), []
    wake.set()
    wake.listen(lambda: calls.append("woken"))
    assert calls == ["woken"]


def test_an_unlistened_listener_is_not_called_and_not_kept() -> None:
    wake, calls = Wake(), []

    def listener() -> None:
        calls.append("woken")

    for _ in range(3):  # a TaskManager never woken, heartbeat after heartbeat
        wake.listen(listener)
        wake.unlisten(listener)
    wake.set()
    assert calls == []
    wake.clear()
    assert not wake.is_set()
