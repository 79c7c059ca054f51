"""The checker on hand-made histories: it passes a correct one and catches each violation.

Without these, a campaign reporting "0 violations" could mean a checker that cannot fail.
"""

from __future__ import annotations

from typing import Any

from chaos.checker import AcceptedJob, Observations, ResultRecord, Violation, check
from chaos.truth import Attempt, GroundTruth

WALL = 1_800_000_000.0  # wall clock = WALL + monotonic in these histories


def _attempt(
    job: str,
    number: int,
    pid: int,
    *,
    start: float,
    stop: float | None = None,
    death: float | None = None,
) -> Attempt:
    value = _value(job, number, pid) if stop is not None else None
    return Attempt(
        job=job,
        attempt=number,
        pid=pid,
        start_t=start,
        start_wall=WALL + start,
        stop_t=stop,
        stop_wall=None if stop is None else WALL + stop,
        value=value,
        death_t=death,
    )


def _value(job: str, number: int, pid: int) -> dict[str, Any]:
    return {"job": job, "attempt": number, "pid": pid, "digest": "d"}


def _result(job: str, at: float, value: Any = None, state: str = "FINISHED") -> ResultRecord:
    return ResultRecord(job=job, state=state, status="CLEAN", value=value, written_wall=WALL + at)


def _observations(*attempts: Attempt, **overrides: Any) -> Observations:
    truth = GroundTruth({(a.job, a.pid): a for a in attempts})
    jobs = sorted({a.job for a in attempts})
    defaults: dict[str, Any] = {
        "accepted": {job: AcceptedJob(job, "plain") for job in jobs},
        "results": {},
        "truth": truth,
    }
    defaults.update(overrides)
    return Observations(**defaults)


def _invariants(violations: list[Violation]) -> list[str]:
    return [v.invariant for v in violations]


def test_a_correct_history_has_no_violation() -> None:
    # Attempt 1 killed at 5.0 (no stop line), attempt 2 starts after its death and finishes.
    first = _attempt("j", 1, 100, start=1.0, death=5.0)
    second = _attempt("j", 2, 200, start=6.0, stop=9.0)
    obs = _observations(first, second, results={"j": _result("j", 9.5, _value("j", 2, 200))})
    assert check(obs) == []


def test_overlapping_attempts_are_doubled() -> None:
    first = _attempt("j", 1, 100, start=1.0, stop=10.0)
    second = _attempt("j", 2, 200, start=5.0, stop=12.0)
    obs = _observations(first, second, results={"j": _result("j", 12.5, _value("j", 2, 200))})
    violations = check(obs)
    assert _invariants(violations) == ["none-doubled"]
    assert violations[0].evidence["overlap_s"] == 5.0


def test_an_attempt_whose_end_is_unknown_overlaps_every_later_one() -> None:
    first = _attempt("j", 1, 100, start=1.0)  # no stop line, no death seen
    second = _attempt("j", 2, 200, start=30.0, stop=31.0)
    obs = _observations(first, second, results={"j": _result("j", 32.0, _value("j", 2, 200))})
    assert _invariants(check(obs)) == ["none-doubled"]


def test_an_accepted_job_without_result_is_lost() -> None:
    done = _attempt("a", 1, 100, start=1.0, stop=2.0)
    obs = _observations(
        done,
        accepted={"a": AcceptedJob("a", "plain"), "b": AcceptedJob("b", "plain")},
        results={"a": _result("a", 3.0, _value("a", 1, 100))},
    )
    violations = check(obs)
    assert _invariants(violations) == ["none-lost"]
    assert violations[0].job == "b"


def test_an_error_the_client_reported_for_its_own_job_is_a_violation() -> None:
    # The job ran and has its result: by the server's records all is well, but the client
    # told its caller the submission failed (issue 23, item 4).
    done = _attempt("a", 1, 100, start=1.0, stop=2.0)
    raised = "JobExistsError: a running submission for job 'a' already exists"
    obs = _observations(
        done, results={"a": _result("a", 3.0, _value("a", 1, 100))}, misreported={"a": raised}
    )
    violations = check(obs)
    assert _invariants(violations) == ["submit-truthful"]
    assert violations[0].evidence == {"client_raised": raised}


def test_an_attempt_started_after_the_result_is_resurrected() -> None:
    done = _attempt("j", 1, 100, start=1.0, stop=2.0)
    zombie = _attempt("j", 2, 200, start=20.0, death=21.0)
    obs = _observations(done, zombie, results={"j": _result("j", 3.0, _value("j", 1, 100))})
    violations = check(obs)
    assert _invariants(violations) == ["none-resurrected"]
    assert violations[0].evidence["started_after_s"] == 17.0


def test_a_result_no_attempt_returned_is_untrue() -> None:
    done = _attempt("j", 1, 100, start=1.0, stop=2.0)
    obs = _observations(done, results={"j": _result("j", 3.0, _value("j", 1, 999))})
    assert _invariants(check(obs)) == ["results-true"]


def test_spark_counts_must_match_the_counts_computed_without_spark() -> None:
    done = _attempt("j", 1, 100, start=1.0, stop=2.0)
    assert done.value is not None
    done.value["counts"] = {"alpha": 2}
    obs = _observations(
        done,
        accepted={"j": AcceptedJob("j", "spark", {"alpha": 3})},
        results={"j": _result("j", 3.0, done.value)},
    )
    assert _invariants(check(obs)) == ["results-true"]


def test_leftover_ha_state_and_stray_attempts_are_reported() -> None:
    done = _attempt("j", 1, 100, start=1.0, stop=2.0)
    dirty = ResultRecord("j", "FINISHED", "DIRTY", _value("j", 1, 100), WALL + 3.0)
    obs = _observations(
        done,
        results={"j": dirty},
        pointers={"j"},
        leases={"other"},
        still_running=[done],
        process_failures=[{"process": "jobmanager jm-1", "exit_code": 1}],
    )
    assert sorted(_invariants(check(obs))) == [
        "no-crash",
        "no-leftover-lease",
        "no-stale-pointer",
        "no-stray-attempt",
        "results-clean",
    ]


def test_canceled_and_failed_results_need_no_value() -> None:
    killed = _attempt("j", 1, 100, start=1.0, death=2.0)
    obs = _observations(killed, results={"j": _result("j", 3.0, None, state="CANCELED")})
    assert check(obs) == []


def test_a_state_shown_by_the_api_that_differs_from_the_store_is_reported() -> None:
    done = _attempt("j", 1, 100, start=1.0, stop=2.0)
    obs = _observations(
        done, results={"j": _result("j", 3.0, _value("j", 1, 100))}, reported={"j": "FAILED"}
    )
    assert _invariants(check(obs)) == ["one-result"]
