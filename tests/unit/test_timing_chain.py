"""The timing chain is validated as a whole when the configuration loads (docs/architecture.md,
"Timing chain"): dead-man <= fence-after, and what a cut-off or frozen process may still run
ends before its session (plus the replacement grace, for attempts) can expire."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.config import load
from steward.errors import ConfigurationError
from steward.timing import TimingChain

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
