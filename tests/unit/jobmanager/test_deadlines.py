"""The leader's deadline heap: due jobs come out earliest first, once; ended jobs never; and
its size stays bounded by the live jobs however many end before their deadline."""

from __future__ import annotations

from steward.jobmanager.leader.deadlines import Deadlines


def test_due_jobs_come_out_earliest_first_and_once() -> None:
    deadlines = Deadlines()
    deadlines.add("late", 30.0)
    deadlines.add("early", 10.0)
    deadlines.add("middle", 20.0)
    assert deadlines.due(5.0) == []
    assert deadlines.due(20.0) == ["early", "middle"]
    assert deadlines.due(20.0) == []
    assert deadlines.due(100.0) == ["late"]
    assert len(deadlines) == 0


def test_a_discarded_job_is_never_due() -> None:
    deadlines = Deadlines()
    deadlines.add("ended", 10.0)
    deadlines.add("live", 10.0)
    deadlines.discard("ended")
    deadlines.discard("never-added")
    assert deadlines.due(10.0) == ["live"]


def test_a_new_deadline_replaces_the_old_one() -> None:
    deadlines = Deadlines()
    deadlines.add("job", 10.0)
    deadlines.add("job", 50.0)
    assert deadlines.due(20.0) == []
    assert deadlines.due(50.0) == ["job"]


def test_the_heap_stays_bounded_when_jobs_end_before_their_deadline() -> None:
    deadlines = Deadlines()
    deadlines.add("long-lived", 1e9)
    for n in range(100_000):
        deadlines.add(f"job-{n}", 1000.0 + n)
        deadlines.discard(f"job-{n}")
    assert len(deadlines) == 1
    assert len(deadlines._heap) <= 64  # stale entries are compacted away
    assert deadlines.due(1e9) == ["long-lived"]
