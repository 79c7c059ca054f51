"""What each kind of fault cost, as the campaign's summary reports it (deaths_by_fault_kind):
pure logic over a ground truth and a fault record, so a free fault shows 0 and a costly one
does not."""

from __future__ import annotations

from chaos.nemesis import Fault
from chaos.summary import deaths_by_fault_kind
from chaos.truth import Attempt, GroundTruth


def _truth(*attempts: Attempt) -> GroundTruth:
    truth = GroundTruth()
    for attempt in attempts:
        truth.attempts[(attempt.job, attempt.pid)] = attempt
    return truth


def _died(job: str, number: int, start: float, death: float) -> Attempt:
    return Attempt(job, number, 100 + number, start, start, death_t=death)


def _stopped(job: str, number: int, start: float, stop: float) -> Attempt:
    return Attempt(job, number, 200 + number, start, start, stop_t=stop, stop_wall=stop)


def test_a_death_counts_for_the_faults_on_at_that_time_or_just_healed() -> None:
    truth = _truth(
        _died("a", 1, 0.0, 12.0),  # during zk_freeze and kill_taskmanager
        _stopped("a", 2, 13.0, 20.0),
        _died("b", 1, 0.0, 33.0),  # 3 s after kill_taskmanager healed: within the grace
        _stopped("b", 2, 34.0, 40.0),
        _died("c", 1, 0.0, 60.0),  # during no fault
        _stopped("c", 2, 61.0, 70.0),
        _stopped("d", 1, 0.0, 11.0),  # ran through a fault and finished: cost nothing
    )
    faults = [
        Fault("zk_freeze", "zookeeper-1", start_t=10.0, end_t=14.0),
        Fault("kill_taskmanager", "tm-1", start_t=11.0, end_t=30.0),
        Fault("kill_standby", "jm-2", start_t=45.0, end_t=47.0),
    ]
    cost = deaths_by_fault_kind(truth, faults, canceled=set(), grace=4.0)
    assert cost == {
        "by_kind": {"kill_taskmanager": 2, "zk_freeze": 1},
        "outside_faults": 1,
        "canceled": 0,
    }


def test_the_last_attempt_of_a_canceled_job_is_the_cancels() -> None:
    truth = _truth(_died("a", 1, 0.0, 5.0), _died("a", 2, 6.0, 9.0))
    faults = [Fault("zk_stop", "zookeeper-2", start_t=4.0, end_t=10.0)]
    cost = deaths_by_fault_kind(truth, faults, canceled={"a"}, grace=4.0)
    assert cost == {"by_kind": {"zk_stop": 1}, "outside_faults": 0, "canceled": 1}
