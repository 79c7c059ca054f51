"""The ``jobmanager.logs.*`` keys: how long the log archive keeps attempts' logs."""

from __future__ import annotations

from steward.config.option import Option, positive
from steward.config.units import to_duration, to_size

LOG_ARCHIVE_OPTIONS: tuple[Option, ...] = (
    Option(
        "jobmanager.logs.max-age",
        to_duration,
        "30d",
        "How long an attempt's archived log (in the HA storage, `logs/<job-id>/<attempt>.log`,"
        " copied there by its TaskManager once the attempt ended) is kept after it was archived."
        " The leader's log rounds then delete it: `steward logs` and the log route answer as if it"
        " had never been archived (the TaskManager's own copy, if still there, or 503/410). `0`:"
        " kept for ever (unless `max-total-size` applies). See"
        " [operations.md](operations.md#archived-attempt-logs).",
        lambda v: None if v >= 0 else "must not be negative (0 keeps logs for ever)",
        setting="log_archive.max_age",
    ),
    Option(
        "jobmanager.logs.max-total-size",
        to_size,
        "10GiB",
        "Most bytes the archived logs of all jobs may take in the HA storage; past it the leader"
        " deletes the oldest first (ten minutes of archiving at a time) until they fit. `0`: no"
        " limit. With both set, whichever deletes more applies. Each log is at most"
        " `taskmanager.attempt-log.max-size`.",
        lambda v: None if v >= 0 else "must not be negative (0 is no limit)",
        setting="log_archive.max_total_size",
    ),
    Option(
        "jobmanager.logs.check-interval",
        to_duration,
        "10m",
        "How often the leader applies the two keys above. Each round lists the archive twice"
        " (once to add up the sizes by age, once to delete), never reading a log.",
        positive,
        setting="log_archive.check_interval",
    ),
)
