"""The timing chain is validated as a whole when the configuration loads (docs/architecture.md,
"Timing chain"): dead-man <= fence-after, and what a cut-off or frozen process may still run
ends before its session (plus the replacement grace, for attempts) can expire."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.config import load
from steward.errors import ConfigurationError
from steward.timing import SAMPLE_SERVERS, ServerTiming, TimingChain
from steward.zookeeper.server_clock import parse_conf

SESSION = "high-availability.zookeeper.session-timeout"


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_the_default_chain_holds_and_derives_every_bound_from_the_session() -> None:
    config = load(environ={})
    assert (
        config.settings.taskmanager.fence_after,
        config.settings.taskmanager.deadman_timeout,
        config.settings.jobmanager.fence_after,
    ) == (
        6.0,
        6.0,
        6.0,
    )
    assert config.settings.timing.problems() == []


def test_a_deadman_timeout_longer_than_the_session_is_refused_naming_the_keys() -> None:
    # The example: 30 s with a 10 s session was accepted.
    with pytest.raises(ConfigurationError) as raised:
        load(environ={}, overrides={"taskmanager.deadman-timeout": "30s", SESSION: "10s"})
    assert raised.value.key == "taskmanager.deadman-timeout"
    assert "taskmanager.deadman-timeout (30s) must not be longer than" in str(raised.value)
    assert "taskmanager.fence-after (6s)" in str(raised.value)


def test_a_deadman_timeout_longer_than_fence_after_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"taskmanager\.deadman-timeout \(4s\)"):
        load(
            environ={},
            overrides={"taskmanager.fence-after": "3s", "taskmanager.deadman-timeout": "4s"},
        )


def test_a_fence_after_that_leaves_no_room_for_the_probe_and_the_kill_is_refused() -> None:
    # 9 s < 10 s passed the old check; but a frozen TaskManager's runner may live 9 s + 1.125 s
    with pytest.raises(ConfigurationError) as raised:
        load(environ={}, overrides={"taskmanager.fence-after": "9s"})
    assert raised.value.key == "taskmanager.fence-after"
    assert "10.125s" in str(raised.value) and "jobmanager.replacement-grace" in str(raised.value)


def test_a_fence_after_not_shorter_than_the_session_is_still_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"fence-after \(10s\) must be shorter"):
        load(
            environ={},
            overrides={"taskmanager.fence-after": "10s", "taskmanager.deadman-timeout": "1s"},
        )


def test_a_jobmanager_fence_after_too_close_to_the_session_is_refused() -> None:
    with pytest.raises(ConfigurationError) as raised:
        load(environ={}, overrides={"jobmanager.fence-after": "9500ms"})
    assert raised.value.key == "jobmanager.fence-after"
    assert "initialize hook" in str(raised.value)


def test_the_replacement_grace_counts_for_attempts_but_not_for_hooks() -> None:
    chain = TimingChain(
        session_timeout=10.0,
        fence_after=8.5,
        deadman_timeout=8.5,
        jobmanager_fence_after=6.0,
        replacement_grace=1.0,
    )
    # attempts: max(8.5, 8.5 + 1.0625) + 1 = 10.5625 <= 10 + 1; hooks: max(6, 8.5 + 0.75) + 1
    # = 10.25 > 10
    assert [key for key, _ in chain.problems()] == ["jobmanager.fence-after"]
    assert chain.problems(session_timeout=12.0) == []


def test_short_sessions_in_the_usual_test_shapes_still_load() -> None:
    for keys in (
        {SESSION: "4s"},
        {SESSION: "4s", "taskmanager.fence-after": "3s", "taskmanager.deadman-timeout": "2s"},
        {SESSION: "6s", "taskmanager.fence-after": "3s", "taskmanager.deadman-timeout": "2s"},
        {SESSION: "1s"},
    ):
        assert load(environ={}, overrides=keys).settings.timing.problems() == []


def test_a_granted_timeout_shorter_than_the_chain_needs_is_explained() -> None:
    chain = load(environ={}, overrides={SESSION: "60s"}).settings.timing
    assert chain.granted_problem(60.0) is None
    problem = chain.granted_problem(40.0)
    assert problem is not None
    assert "granted a session timeout of 40s" in problem
    assert "asks for 60s" in problem and "maxSessionTimeout" in problem
    assert "taskmanager.fence-after" in problem


MANAGED_SERVERS = ServerTiming(tick_time=0.5, sync_limit=6)
"""The managed ZooKeeper's clock (steward.zookeeper.layout)."""


def test_the_default_chain_holds_with_the_sample_and_the_managed_servers_clock() -> None:
    chain = load(environ={}).settings.timing
    assert chain.problems(servers=SAMPLE_SERVERS) == []
    assert chain.problems(servers=MANAGED_SERVERS) == []
    assert chain.servers_problem(10.0, SAMPLE_SERVERS) is None
    # and the 4 s sessions the tests, the demo and the chaos campaigns use
    assert (
        load(environ={}, overrides={SESSION: "4s"}).settings.timing.problems(
            servers=MANAGED_SERVERS
        )
        == []
    )


def test_the_leaders_lag_in_hearing_of_a_followers_round_trips_counts_in_the_chain() -> None:
    # F + P + M = 3.1 + 0.3875 + 0.4 = 3.8875 <= 4 holds alone; the leader hears of a round
    # trip through a follower up to tickTime/2 + P late: 3.1 + 0.25 + 0.3875 + 0.4 > 4.
    chain = TimingChain(
        session_timeout=4.0,
        fence_after=3.1,
        deadman_timeout=3.1,
        jobmanager_fence_after=3.1,
        replacement_grace=0.0,
    )
    assert chain.problems() == []
    broken = chain.problems(servers=MANAGED_SERVERS)
    assert [key for key, _ in broken] == ["taskmanager.fence-after", "jobmanager.fence-after"]
    problem = chain.servers_problem(4.0, MANAGED_SERVERS)
    assert problem is not None
    assert "tick every 0.5s" in problem and "tickTime/2 + one probe period = 0.6375s" in problem
    assert "Lower jobmanager.fence-after, taskmanager.fence-after" in problem
    assert chain.servers_problem(4.0, ServerTiming(tick_time=0.2, sync_limit=5)) is None


def test_the_servers_clock_is_read_from_their_conf() -> None:
    ensemble = "clientPort=2181\ndataDir=/x\ntickTime=2000\ninitLimit=10\nsyncLimit=5\n"
    assert parse_conf(ensemble) == ServerTiming(tick_time=2.0, sync_limit=5)
    assert parse_conf("clientPort=2181\ntickTime=500\n") == ServerTiming(0.5, 0)  # standalone
    assert parse_conf("") is None  # conf not allowed, or no answer
    assert parse_conf("conf is not executed because it is not in the whitelist.") is None
