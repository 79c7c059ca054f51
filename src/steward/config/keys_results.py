"""The ``jobmanager.results.*`` keys: how long the JobResultStore keeps results (rule 7)."""

from __future__ import annotations

from steward.config.option import Option, positive
from steward.config.units import to_duration, to_int

RESULT_OPTIONS: tuple[Option, ...] = (
    Option(
        "jobmanager.results.max-age",
        to_duration,
        "0",
        "How long a finished job's result is kept after the job ended (e.g. `365d`). The leader's"
        " result rounds then remove it, index and body: `steward result` answers 404 and the job's"
        " id may be submitted again, as a new job. `0`: results are kept for ever (each costs"
        " ZooKeeper an index of under 200 bytes, its body is in blob storage). A result whose"
        " cleanup is not done (DIRTY) is never removed. See"
        " [operations.md](operations.md#results-for-years).",
        lambda v: None if v >= 0 else "must not be negative (0 keeps results for ever)",
        setting="results.max_age",
    ),
    Option(
        "jobmanager.results.max-count",
        to_int,
        "0",
        "Most results kept; past it the oldest finished ones are removed first, with the same"
        " consequences as `max-age`. `0`: no limit. With both set, whichever removes more applies.",
        lambda v: None if v >= 0 else "must not be negative (0 is no limit)",
        setting="results.max_count",
    ),
    Option(
        "jobmanager.results.check-interval",
        to_duration,
        "10m",
        "How often the leader applies the two keys above. Its first round, once its recovery is"
        " done, also migrates results that a version before 2026-11-27 kept whole in ZooKeeper to"
        " blob storage.",
        positive,
        setting="results.check_interval",
    ),
)
