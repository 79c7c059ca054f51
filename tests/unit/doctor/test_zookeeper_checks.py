"""The ZooKeeper checks' logic: versions with known data-loss bugs, session bounds, parsing.

The servers' answers here are ServerReports written by hand; asking a real server is tested in
tests/integration/stores/test_doctor_findings.py.
"""

from __future__ import annotations

import pytest

from steward.doctor.zookeeper_checks import check_servers, version_problem
from steward.wire.doctor import ServerReport, Severity
from steward.zookeeper.server_clock import servers_of


@pytest.mark.parametrize(
    ("version", "bad"),
    [
        ("3.8.0", True),
        ("3.8.3-abcdef", True),
        ("3.4.14", True),
        ("3.8.4", False),
        ("3.9.2", False),
        ("3.9.3", True),
        ("3.9.5-e6bd0fc8a4d8ba0e6f9b8b8b", False),
        ("3.10.0", False),
    ],
)
def test_versions_with_known_lost_write_bugs_are_named(version: str, bad: bool) -> None:
    assert (version_problem(version) is not None) == bad


def test_an_old_server_is_an_error_naming_its_version() -> None:
    report = ServerReport(address="zk1:2181", answered=True, version="3.8.0", mode="follower")

    [finding] = check_servers([report], session_timeout=10.0)

    assert (finding.check, finding.severity, finding.subject) == (
        "zookeeper-version",
        Severity.ERROR,
        "zk1:2181",
    )
    assert "3.8.0" in finding.message and "3.8.4" in finding.action


def test_a_silent_server_is_a_warning() -> None:
    [finding] = check_servers([ServerReport(address="zk2:2181", answered=False)], 10.0)

    assert finding.check == "zookeeper-server-silent"
    assert finding.severity is Severity.WARNING


@pytest.mark.parametrize(
    ("tick", "low", "high", "timeout", "grants"),
    [
        (2000, -1, -1, 2.0, "4 s"),  # below 2 x tickTime
        (500, -1, -1, 30.0, "10 s"),  # above 20 x tickTime
        (500, 1000, 120000, 300.0, "120 s"),  # above an explicit maxSessionTimeout
    ],
)
def test_a_session_timeout_outside_the_servers_bounds_says_what_it_gets(
    tick: int, low: int, high: int, timeout: float, grants: str
) -> None:
    report = ServerReport(
        address="zk:2181",
        answered=True,
        version="3.9.5",
        tick_time_ms=tick,
        min_session_timeout_ms=low,
        max_session_timeout_ms=high,
    )

    [finding] = check_servers([report], session_timeout=timeout)

    assert finding.check == "session-timeout-bounds"
    assert f"gives {grants} instead" in finding.message


def test_a_session_timeout_within_bounds_is_no_finding() -> None:
    report = ServerReport(address="zk:2181", answered=True, version="3.9.5", tick_time_ms=500)

    assert list(check_servers([report], session_timeout=10.0)) == []


def test_connect_strings_are_split_into_servers() -> None:
    assert servers_of("a:1,b:2/steward") == [("a", 1), ("b", 2)]
    assert servers_of("[::1]:2181, zk") == [("::1", 2181), ("zk", 2181)]
