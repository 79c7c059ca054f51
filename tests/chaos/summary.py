"""A campaign's JSON summary: jobs, faults, failover times, what each kind of fault cost, and
the violations (docs/reliability.md, "Running a campaign")."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from chaos.checker import Observations, Violation
from chaos.cluster import ChaosCluster
from chaos.nemesis import Fault, Nemesis
from chaos.truth import GroundTruth
from chaos.workload import Workload

if TYPE_CHECKING:
    from chaos.campaign import Campaign, CampaignSettings


def summarize(
    campaign: Campaign,
    ran: float,
    *,
    workload: Workload,
    nemesis: Nemesis,
    obs: Observations,
    violations: list[Violation],
    cluster: ChaosCluster,
) -> dict[str, Any]:
    states = [obs.results[j].state for j in obs.accepted if j in obs.results]
    times = sorted(f.seconds for f in nemesis.failovers if f.seconds is not None)
    attempts = list(obs.truth.attempts.values())
    modes = [a.mode for a in obs.accepted.values()]
    return {
        "seed": campaign.settings.seed,
        "cluster_id": campaign.cluster_id,
        "duration_s": round(ran, 1),
        "wall_s": round(time.monotonic() - campaign.started, 1),
        "settings": _settings_json(campaign.settings),
        "jobs": {
            "accepted": len(obs.accepted),
            "finished": states.count("FINISHED"),
            "failed": states.count("FAILED"),
            "canceled": states.count("CANCELED"),
            "spark": modes.count("spark"),
            "never_accepted": len(workload.never_accepted),
            "submit_retries": workload.submit_retries,
            "attempts": len(attempts),
            "attempts_restarted": len(attempts) - len({a.job for a in attempts}),
        },
        "ground_truth": _truth_figures(obs.truth),
        "deaths_by_fault_kind": deaths_by_fault_kind(
            obs.truth,
            nemesis.faults,
            canceled={
                j for j in obs.accepted if j in obs.results and obs.results[j].state == "CANCELED"
            },
            grace=campaign.settings.session_timeout,
        ),
        "faults_by_kind": nemesis.counts(),
        "faults_total": len(nemesis.faults),
        "faults_not_injected": nemesis.skipped,
        "fault_errors": nemesis.errors,
        "failover_s": {
            **_spread(times),
            "by_trigger": {
                trigger: _spread(
                    sorted(
                        f.seconds
                        for f in nemesis.failovers
                        if f.trigger == trigger and f.seconds is not None
                    )
                )
                for trigger in sorted({f.trigger for f in nemesis.failovers})
            },
            "no_new_leader": sum(1 for f in nemesis.failovers if f.new_leader is None),
            "all": [asdict(f) for f in nemesis.failovers],
        },
        "tracebacks_in_logs": cluster.traceback_count(),
        "violations": [v.to_json() for v in violations],
        "faults": [f.to_json(campaign.started) for f in nemesis.faults],
    }


def _truth_figures(truth: GroundTruth) -> dict[str, Any]:
    """How close the run came to the invariants: the smallest gap between an attempt's end
    and the start of the job's next attempt (negative would be an overlap)."""
    gaps = []
    for job in {a.job for a in truth.attempts.values()}:
        attempts = truth.of_job(job)
        for before, after in itertools.pairwise(attempts):
            if before.end_t is not None:
                gaps.append(after.start_t - before.end_t)
    values = list(truth.attempts.values())
    return {
        "attempts_stopped": sum(1 for a in values if a.stop_t is not None),
        "attempts_died": sum(1 for a in values if a.stop_t is None),
        "deaths_inexact": sum(1 for a in values if a.stop_t is None and not a.death_exact),
        "successor_gap_s": _spread(sorted(gaps)),
        "bad_lines": len(truth.bad_lines),
    }


def deaths_by_fault_kind(
    truth: GroundTruth, faults: Sequence[Fault], *, canceled: set[str], grace: float
) -> dict[str, Any]:
    """What each kind of fault cost: the attempts that died (no stop line) while a fault of
    that kind was on, or within ``grace`` (the session timeout) after it healed, by kind.

    A death within several faults' windows counts for each of their kinds; the last attempt
    of a job the workload canceled is the cancel's, not a fault's. What the design says costs
    nothing (one ZooKeeper server of three stopped or frozen, a standby killed or frozen) must
    show 0 here when its faults run alone.
    """
    by_kind: dict[str, int] = {}
    outside = by_cancel = 0
    for job in {a.job for a in truth.attempts.values()}:
        attempts = truth.of_job(job)
        for index, attempt in enumerate(attempts):
            if attempt.stop_t is not None or attempt.death_t is None:
                continue
            if job in canceled and index == len(attempts) - 1:
                by_cancel += 1
                continue
            kinds = {
                f.kind
                for f in faults
                if f.start_t <= attempt.death_t <= (f.end_t or attempt.death_t) + grace
            }
            for kind in kinds:
                by_kind[kind] = by_kind.get(kind, 0) + 1
            outside += not kinds
    return {
        "by_kind": dict(sorted(by_kind.items())),
        "outside_faults": outside,
        "canceled": by_cancel,
    }


def _spread(times: list[float]) -> dict[str, Any]:
    """count, min, median, max of sorted ``times`` (None when empty)."""
    return {
        "count": len(times),
        "min": round(times[0], 3) if times else None,
        "median": round(statistics.median(times), 3) if times else None,
        "max": round(times[-1], 3) if times else None,
    }


def _settings_json(settings: CampaignSettings) -> dict[str, Any]:
    raw = asdict(settings)
    raw["workdir"] = str(settings.workdir) if settings.workdir else None
    return json.loads(json.dumps(raw, default=str))  # type: ignore[no-any-return]
