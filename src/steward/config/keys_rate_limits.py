"""The ``security.rate-limits.*`` keys: how often one address or credential may fail to
authenticate, and how many jobs one team may submit, on each JobManager
(:mod:`steward.security.rate_limits`). A limit of 0 turns that limit off."""

from __future__ import annotations

from steward.config.option import Option
from steward.config.units import to_duration, to_int
from steward.wire.patterns import MAX_BATCH


def _limit(value: int) -> str | None:
    return None if value >= 0 else "must not be negative (0 turns the limit off)"


def _team_limit(value: int) -> str | None:
    # Below one full batch, every full batch would be refused however idle the team.
    if value == 0 or value >= MAX_BATCH:
        return None
    return f"must be 0 (off) or at least {MAX_BATCH}, the jobs one batch request may hold"


def _window(value: float) -> str | None:
    return None if value >= 1 else "must be at least 1s"


RATE_LIMIT_OPTIONS: tuple[Option, ...] = (
    Option(
        "security.rate-limits.auth-failures.per-address",
        to_int,
        30,
        "Failed authentications (a token or UI cookie the REST API answers 401, a token the UI's"
        " login form refuses) one source address may make per `auth-failures.window`; past it"
        " every request from that address that is not the cluster's internal credential is"
        " answered 429 with `Retry-After` until the window has room again, a valid token"
        " included, so a guessing loop never learns which guess was right. IPv6 addresses count"
        " by their /64. Requests with no credential at all are not counted. `0`: off. See"
        " [security.md](security.md#rate-limits).",
        _limit,
        setting="rate_limits.auth_failures_per_address",
    ),
    Option(
        "security.rate-limits.auth-failures.per-credential",
        to_int,
        10,
        "Failed authentications with one and the same credential (a revoked or mistyped token"
        " a script keeps sending) per `auth-failures.window`, from any address; past it that"
        " credential is answered 429 instead of 401. Counted by the credential presented, not by"
        " the token id it names, so nobody can lock a valid token out by guessing at its id."
        " `0`: off.",
        _limit,
        setting="rate_limits.auth_failures_per_credential",
    ),
    Option(
        "security.rate-limits.auth-failures.window",
        to_duration,
        "5m",
        "The sliding window of the two failure limits above.",
        _window,
        setting="rate_limits.auth_failure_window",
    ),
    Option(
        "security.rate-limits.submissions.per-team",
        to_int,
        2000,
        "Jobs one team may submit per `submissions.window`, counted by each JobManager (the"
        " leader sees them all: standbys forward them). Each job of a `POST /v1/jobs/batch`"
        " counts, Livy's `POST /batches` too; past it 429 with"
        " `Retry-After`, nothing stored. A caller in no team counts under its own name. The"
        " default lets a burst of 2,000 jobs in (four times an orchestrator's 500 at midnight)"
        " and then about 3 a second, a fifth of what a leader accepts from many clients. `0`:"
        " off; else at least 100 (one full batch). See"
        " [operations.md](operations.md#rate-limits).",
        _team_limit,
        setting="rate_limits.submissions_per_team",
    ),
    Option(
        "security.rate-limits.submissions.window",
        to_duration,
        "10m",
        "The sliding window of `submissions.per-team`.",
        _window,
        setting="rate_limits.submission_window",
    ),
)
