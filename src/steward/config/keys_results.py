"""The ``jobmanager.results.*`` keys: how long the JobResultStore keeps results (rule 7)."""

from __future__ import annotations

from steward.config.option import Option, positive
from steward.config.units import to_duration, to_int

RESULT_OPTIONS: tuple[Option, ...] = (
    Option(
        "jobmanager.results.max-age",
        to_duration,
        "0",
        "How long a finished job's result is kept after the job ended; the leader then removes"
        " it (index and body), and the job's id may be submitted again as a new job. 0: kept"
        " for ever (a result only costs ZooKeeper its small index, under 200 bytes).",
        lambda v: None if v >= 0 else "must not be negative (0 keeps results for ever)",
        setting="results.max_age",
    ),
    Option(
        "jobmanager.results.max-count",
        to_int,
        "0",
        "Most results kept; past it the leader removes the oldest finished ones first (their"
        " ids may then be submitted again). 0: no limit.",
        lambda v: None if v >= 0 else "must not be negative (0 is no limit)",
        setting="results.max_count",
    ),
    Option(
        "jobmanager.results.check-interval",
        to_duration,
        "10m",
        "How often the leader applies jobmanager.results.max-age and max-count (and, once per"
        " term, moves results an older version kept whole in ZooKeeper to blob"
        " storage).",
        positive,
        setting="results.check_interval",
    ),
)
