"""The fair choice between queues, priority and age within one, and the concurrency limits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.config import LabelLimit, QueueSpec, SchedulingSettings
from steward.config.keys_scheduling import to_label_limits, to_queues
from steward.errors import JobRejectedError
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.queues import QueuePass, check_queue
from steward.wire.jobs import JobGraphPointer, JobSpec

POINTER = JobGraphPointer(blob="b", sha256="0" * 64, epoch=1)


def job(job_id: str, queue: str = "default", *, at: float = 0.0, **spec: object) -> JobMaster:
    return JobMaster(JobSpec(job_id=job_id, queue=queue, **spec), POINTER, at)  # type: ignore[arg-type]


def plan_of(*queues: QueueSpec, capacity: int, limits: tuple[LabelLimit, ...] = ()) -> QueuePass:
    return QueuePass(to_queues([_table(q) for q in queues]), limits, capacity)


def _table(queue: QueueSpec) -> dict[str, object]:
    return {
        "name": queue.name,
        "guarantee": queue.guarantee,
        "maximum": queue.maximum,
        "weight": queue.weight,
    }


def fill(plan: QueuePass) -> list[JobMaster]:
    """Hand out every slot as the scheduler does, with room on some TaskManager for each."""
    placed: list[JobMaster] = []
    while sum(q.used for q in plan.queues.values()) < plan.capacity:
        queue = plan.neediest()
        if queue is None:
            break
        master = plan.pop(queue)
        if plan.concurrency.held(master) is None:
            plan.started(master)
            placed.append(master)
    return placed


def test_a_free_slot_goes_to_the_queue_furthest_below_its_guarantee() -> None:
    plan = plan_of(QueueSpec("a", 0.5), QueueSpec("b", 0.5), capacity=10)
    for i in range(8):
        plan.holding(job(f"a-running-{i}", "a"))
    plan.wants(job("a-next", "a", at=1.0))
    plan.wants(job("b-next", "b", at=2.0))  # younger, but its queue holds nothing
    plan.ready()
    queue = plan.neediest()
    assert queue is not None and queue.name == "b"


def test_past_their_guarantees_the_spare_slots_follow_the_weights() -> None:
    plan = plan_of(QueueSpec("a", 0.0, weight=3), QueueSpec("b", 0.0, weight=1), capacity=8)
    for i in range(20):
        plan.wants(job(f"a{i}", "a", at=i))
        plan.wants(job(f"b{i}", "b", at=i))
    plan.ready()
    placed = fill(plan)
    by_queue = [m.spec.queue for m in placed]
    assert by_queue.count("a") == 6 and by_queue.count("b") == 2


def test_within_a_queue_a_higher_priority_starts_first_then_the_older_job() -> None:
    plan = plan_of(capacity=3)
    plan.wants(job("old-low", at=1.0))
    plan.wants(job("new-high", at=3.0, priority=5))
    plan.wants(job("newer-low", at=2.0))
    plan.wants(job("newest-high", at=4.0, priority=5))
    plan.ready()
    assert [m.job_id for m in fill(plan)] == ["new-high", "newest-high", "old-low"]


def test_a_queue_at_its_maximum_gets_no_slot_even_when_slots_are_free() -> None:
    plan = plan_of(QueueSpec("capped", 0.2, maximum=0.25), capacity=8)
    for i in range(5):
        plan.wants(job(f"c{i}", "capped", at=i))
    plan.ready()
    placed = fill(plan)
    assert len(placed) == 2  # 25 % of 8
    capped = plan.queues["capped"]
    assert capped.at_maximum()
    assert "queue 'capped' is at its maximum share" in capped.full_reason(8)
    assert capped.view(8).waiting == 3


def test_a_job_s_max_concurrent_holds_back_the_jobs_of_its_name() -> None:
    plan = plan_of(capacity=10)
    plan.holding(job("nightly-1", name="nightly", max_concurrent=1))
    waiting = job("nightly-2", name="nightly", max_concurrent=1)
    other = job("other", name="hourly", max_concurrent=1)
    held = plan.concurrency.held(waiting)
    assert held is not None and "max_concurrent=1" in held
    assert plan.concurrency.held(other) is None


def test_a_label_limit_holds_back_jobs_carrying_that_label() -> None:
    limits = to_label_limits("team=ml:2")
    plan = plan_of(capacity=10, limits=limits)
    for i in range(4):
        plan.wants(job(f"ml{i}", at=i, labels={"team": "ml"}))
    plan.wants(job("etl", at=9, labels={"team": "etl"}))
    plan.ready()
    placed = [m.job_id for m in fill(plan)]
    assert placed == ["ml0", "ml1", "etl"]
    assert "labelled team=ml" in (plan.concurrency.held(job("ml9", labels={"team": "ml"})) or "")


def test_an_unknown_queue_is_refused_naming_the_known_ones() -> None:
    settings_ = SchedulingSettings(queues=to_queues("etl:guarantee=0.5"))
    check_queue(JobSpec(job_id="j", queue="etl"), settings_)
    with pytest.raises(JobRejectedError, match=r"no queue 'nope'.*default, etl"):
        check_queue(JobSpec(job_id="j", queue="nope"), settings_)


def test_a_job_of_a_queue_no_longer_configured_waits_in_the_default_queue() -> None:
    plan = plan_of(capacity=1)
    plan.wants(job("orphan", "gone"))
    plan.ready()
    assert plan.queues["default"].view(1).waiting == 1


@settings(max_examples=200, deadline=None)
@given(
    guarantees=st.lists(st.integers(0, 10), min_size=2, max_size=4),
    capacity=st.integers(1, 40),
    demand=st.integers(0, 60),
)
def test_every_busy_queue_gets_its_guarantee_and_none_passes_its_maximum(
    guarantees: list[int], capacity: int, demand: int
) -> None:
    total = max(10, sum(guarantees))
    specs = [
        QueueSpec(f"q{i}", g / total, maximum=min(1.0, g / total + 0.3), weight=1 + i)
        for i, g in enumerate(guarantees)
    ]
    plan = QueuePass(tuple(specs), (), capacity)
    for i, spec in enumerate(specs):
        for n in range(demand):
            plan.wants(job(f"{spec.name}-{n}", spec.name, at=n + i / 10))
    plan.ready()
    fill(plan)
    for queue in plan.queues.values():
        assert queue.used <= queue.max_slots(capacity)
        wanted_more = queue.wanted > queue.placed
        if wanted_more and sum(q.used for q in plan.queues.values()) == capacity:
            assert queue.used >= min(math.floor(queue.guaranteed_slots(capacity)), demand)


def test_queues_are_read_from_toml_tables_and_from_one_string() -> None:
    from_toml = to_queues([{"name": "etl", "guarantee": 0.6, "maximum": 1.0, "weight": 2}])
    from_text = to_queues("etl:guarantee=0.6,maximum=1,weight=2")
    assert from_toml == from_text
    assert [q.name for q in from_text] == ["default", "etl"]
    assert from_text[0].guarantee == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a:guarantee=0.7;b:guarantee=0.7", "add up to 1.4"),
        ("a:guarantee=0.8,maximum=0.5", "guarantee <= maximum"),
        ("Bad Name:guarantee=0.1", "queue name"),
        ("a:share=0.1", "unknown fields"),
        ("a:guarantee=x", "not a number"),
        ("a;a", "named twice"),
    ],
)
def test_a_bad_queue_table_is_refused_saying_why(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        to_queues(text)


def test_a_job_limited_by_max_concurrent_must_have_a_name() -> None:
    with pytest.raises(ValueError, match="give the job a name"):
        JobSpec(job_id="j", max_concurrent=1)
