"""The invariants, checked after a campaign against ground truth and ZooKeeper's final state.

Pure: :func:`check` takes what was observed (:class:`Observations`) and returns every
violation with its evidence, so the checker itself is unit-tested on hand-made histories
(tests/chaos/test_checker.py) and can be shown to fail.

Invariants (docs/reliability.md):

- **none lost**: every accepted job has exactly one result in the JobResultStore, and the
  terminal state the API showed the client is the one in the store;
- **submit truthful**: the client never reported an error (``JobExistsError``, or
  ``JobTerminatedError`` with no earlier call of unknown outcome) for a job it submitted
  itself (what the client reported, not what the server holds: issue 23, item 4);
- **none doubled**: no two attempts of one job overlapped in time (ground truth intervals:
  start line to stop line, or to the process's death);
- **none resurrected**: no attempt started after its job's result was written;
- **results true**: a FINISHED job's result value is the value one of its attempts returned
  (its ``stop`` line), and a Spark job's counts are the counts computed without Spark;
- **no stray process**: once every job is terminal, no attempt still runs;
- **HA state clean**: no job graph pointer for a job with a result, no execution lease left,
  every result CLEAN;
- **no crash**: no Steward process exited unless the nemesis killed it, and no thread died of
  an uncaught exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaos.truth import Attempt, GroundTruth

TERMINAL = ("FINISHED", "FAILED", "CANCELED")


@dataclass(frozen=True)
class AcceptedJob:
    job: str
    mode: str
    """``plain`` or ``spark``."""
    expected_counts: dict[str, int] | None = None


@dataclass(frozen=True)
class ResultRecord:
    """A ``results/<job-id>`` entry as read from ZooKeeper."""

    job: str
    state: str
    status: str
    value: Any
    written_wall: float
    """The znode's creation time (ZooKeeper's clock, this machine's): when the result was
    written."""


@dataclass
class Observations:
    accepted: dict[str, AcceptedJob]
    results: dict[str, ResultRecord]
    truth: GroundTruth
    still_running: list[Attempt] = field(default_factory=list)
    pointers: set[str] = field(default_factory=set)
    leases: set[str] = field(default_factory=set)
    process_failures: list[dict[str, Any]] = field(default_factory=list)
    reported: dict[str, str] = field(default_factory=dict)
    """The terminal state the client was shown for each job (REST API), by job id."""
    last_views: dict[str, Any] = field(default_factory=dict)
    """The REST view of each job still open at the end (evidence for a lost job)."""
    misreported: dict[str, str] = field(default_factory=dict)
    """Jobs of the workload's own the client said it could not submit: what it raised."""


@dataclass(frozen=True)
class Violation:
    invariant: str
    job: str | None
    evidence: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "job": self.job, "evidence": self.evidence}


# ZooKeeper's ctime has millisecond resolution.
_CLOCK_SLACK = 0.002


def check(obs: Observations) -> list[Violation]:
    """Every violation of the invariants in ``obs``, with evidence; [] when all hold."""
    violations: list[Violation] = []
    violations += _lost(obs)
    violations += [
        Violation("submit-truthful", job, {"client_raised": raised})
        for job, raised in sorted(obs.misreported.items())
    ]
    for job in sorted(obs.accepted):
        attempts = obs.truth.of_job(job)
        violations += _doubled(job, attempts)
        result = obs.results.get(job)
        if result is not None:
            violations += _resurrected(result, attempts)
            violations += _untrue(obs.accepted[job], result, attempts)
    violations += _stray(obs)
    violations += _ha_state(obs)
    violations += [Violation("no-crash", None, failure) for failure in obs.process_failures]
    return violations


def _lost(obs: Observations) -> list[Violation]:
    found = []
    for job in sorted(obs.accepted):
        result = obs.results.get(job)
        if result is None:
            evidence = {"result": None, "last_view": obs.last_views.get(job)}
            found.append(Violation("none-lost", job, evidence))
        elif result.state not in TERMINAL:
            found.append(Violation("none-lost", job, {"state": result.state}))
        elif obs.reported.get(job, result.state) != result.state:
            evidence = {"api_said": obs.reported[job], "result_store": result.state}
            found.append(Violation("one-result", job, evidence))
    return found


def _doubled(job: str, attempts: list[Attempt]) -> list[Violation]:
    found = []
    for index, first in enumerate(attempts):
        end = first.end_t if first.end_t is not None else float("inf")
        for second in attempts[index + 1 :]:
            if second.start_t < end:
                found.append(
                    Violation(
                        "none-doubled",
                        job,
                        {
                            "first": first.to_json(),
                            "second": second.to_json(),
                            "overlap_s": (min(end, second.end_t or float("inf"))) - second.start_t,
                        },
                    )
                )
    return found


def _resurrected(result: ResultRecord, attempts: list[Attempt]) -> list[Violation]:
    return [
        Violation(
            "none-resurrected",
            result.job,
            {
                "attempt": attempt.to_json(),
                "result_written_wall": result.written_wall,
                "started_after_s": attempt.start_wall - result.written_wall,
            },
        )
        for attempt in attempts
        if attempt.start_wall > result.written_wall + _CLOCK_SLACK
    ]


def _untrue(
    accepted: AcceptedJob, result: ResultRecord, attempts: list[Attempt]
) -> list[Violation]:
    if result.state != "FINISHED":
        return []
    value = result.value
    returned = [a.value for a in attempts if a.stop_t is not None]
    if value not in returned:
        return [
            Violation(
                "results-true",
                result.job,
                {"result_value": value, "values_returned": returned},
            )
        ]
    if accepted.expected_counts is not None and value.get("counts") != accepted.expected_counts:
        return [
            Violation(
                "results-true",
                result.job,
                {"counts": value.get("counts"), "expected": accepted.expected_counts},
            )
        ]
    return []


def _stray(obs: Observations) -> list[Violation]:
    return [
        Violation("no-stray-attempt", a.job, {"attempt": a.to_json()}) for a in obs.still_running
    ]


def _ha_state(obs: Observations) -> list[Violation]:
    found = [
        Violation("no-stale-pointer", job, {"pointer": f"jobgraphs/{job}"})
        for job in sorted(obs.pointers)
        if job in obs.results
    ]
    found += [
        Violation("no-leftover-lease", job, {"lease": f"executions/{job}"})
        for job in sorted(obs.leases)
    ]
    found += [
        Violation("results-clean", job, {"status": result.status})
        for job, result in sorted(obs.results.items())
        if job in obs.accepted and result.status != "CLEAN"
    ]
    return found
