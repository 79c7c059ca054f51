"""Which results the retention policy removes (jobmanager.results.*): pure logic, no store."""

from __future__ import annotations

from steward.config import ResultSettings
from steward.jobmanager.leader.retention import expired
from steward.store.result_index import ResultNode
from steward.wire.records import JobResultIndex
from steward.wire.states import CleanupStatus, TerminalState

NOW = 1_800_000_000.0
DAY = 86_400.0


def _node(job_id: str, days_ago: float, status: CleanupStatus = CleanupStatus.CLEAN) -> ResultNode:
    index = JobResultIndex(
        state=TerminalState.FINISHED,
        status=status,
        sha256="0" * 64,
        finished_at=NOW - days_ago * DAY,
    )
    return ResultNode(job_id, version=1, modified=NOW, index=index)


def _policy(max_age_days: float = 0, max_count: int = 0) -> ResultSettings:
    return ResultSettings(max_age=max_age_days * DAY, max_count=max_count, check_interval=60.0)


def _ids(nodes: list[ResultNode]) -> list[str]:
    return [node.job_id for node in nodes]


def test_the_default_policy_keeps_every_result_for_ever() -> None:
    nodes = [_node("a", 3650), _node("b", 1)]

    assert expired(nodes, NOW, _policy()) == []


def test_results_older_than_the_max_age_go_oldest_first() -> None:
    nodes = [_node("young", 1), _node("old", 40), _node("older", 400)]

    assert _ids(expired(nodes, NOW, _policy(max_age_days=30))) == ["older", "old"]


def test_past_the_max_count_the_oldest_go_until_the_count_is_met() -> None:
    nodes = [_node(f"job-{n}", days_ago=n) for n in range(10)]

    assert _ids(expired(nodes, NOW, _policy(max_count=7))) == ["job-9", "job-8", "job-7"]


def test_a_dirty_result_is_never_removed_however_old_and_counts_towards_the_limit() -> None:
    nodes = [_node("dirty", 400, CleanupStatus.DIRTY), _node("clean-old", 300), _node("new", 0)]

    assert _ids(expired(nodes, NOW, _policy(max_age_days=30))) == ["clean-old"]
    assert _ids(expired(nodes, NOW, _policy(max_count=1))) == ["clean-old", "new"]


def test_age_and_count_together_remove_whichever_is_more() -> None:
    nodes = [_node(f"job-{n}", days_ago=n * 10) for n in range(6)]  # 0, 10, ... 50 days

    by_age = expired(nodes, NOW, _policy(max_age_days=25, max_count=5))
    by_count = expired(nodes, NOW, _policy(max_age_days=45, max_count=2))

    assert _ids(by_age) == ["job-5", "job-4", "job-3"]
    assert _ids(by_count) == ["job-5", "job-4", "job-3", "job-2"]
