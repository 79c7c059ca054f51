"""The servers' clock against the timing chain: the doctor's findings about tickTime/syncLimit.

The servers' answers are ServerReports written by hand and the session is a stand-in carrying
only what the check reads (the chain and the granted timeout): the logic is the arithmetic.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from steward.doctor.clock_checks import check_server_clock
from steward.timing import TimingChain
from steward.wire.doctor import ServerReport, Severity


def _session(session_timeout: float = 10.0, fence_after: float = 6.0, grace: float = 1.0) -> Any:
    chain = TimingChain(session_timeout, fence_after, fence_after, fence_after, grace)
    return SimpleNamespace(
        timing=chain, granted_session_timeout=session_timeout, session_timeout=session_timeout
    )


def _server(tick_ms: int | None, sync_limit: int | None) -> ServerReport:
    return ServerReport(
        address="zk1:2181", answered=True, tick_time_ms=tick_ms, sync_limit=sync_limit
    )


def test_the_managed_ensembles_clock_with_the_defaults_has_no_finding() -> None:
    assert list(check_server_clock([_server(500, 6)], _session())) == []


def test_the_sample_clock_keeps_the_chain_but_would_fence_on_a_frozen_zookeeper_leader() -> None:
    [finding] = check_server_clock([_server(2000, 5)], _session())
    assert (finding.check, finding.severity) == ("zookeeper-follower-grace", Severity.WARNING)
    assert "syncLimit x tickTime (10 s)" in finding.message
    assert "fences after 6 s" in finding.message


def test_a_tick_too_long_for_the_configured_timeouts_is_an_error() -> None:
    session = _session(session_timeout=4.0, fence_after=3.1, grace=0.0)
    findings = list(check_server_clock([_server(500, 0)], session))
    assert [(f.check, f.severity) for f in findings] == [
        ("zookeeper-tick-breaks-timing", Severity.ERROR)
    ]
    assert "tick every 0.5s" in findings[0].message


def test_a_server_hiding_its_conf_is_said_and_a_silent_one_left_to_its_own_check() -> None:
    silent = ServerReport(address="zk2:2181", answered=False)
    [finding] = check_server_clock([_server(None, None), silent], _session())
    assert (finding.check, finding.subject) == ("zookeeper-conf-hidden", "zk1:2181")
