"""Links from a job's attempts to their runs in the Spark History Server.

The link is the JobManager's to add, at answer time, from its own ``history.server.*`` keys:
the runner reports only the application id (:class:`~steward.wire.records.SparkApp`), and a
link stored with the attempt would go stale when the History Server moves.
"""

from __future__ import annotations

from steward.sparkconf.event_log import history_link
from steward.wire.records import AttemptRecord
from steward.wire.rest import JobView


def with_history_links(view: JobView, base_url: str | None) -> JobView:
    """``view`` with each attempt's ``spark_app.history_url`` set (unchanged without a base)."""
    if base_url is None or not any(attempt.spark_app for attempt in view.attempts):
        return view
    return view.model_copy(update={"attempts": [_linked(a, base_url) for a in view.attempts]})


def _linked(attempt: AttemptRecord, base_url: str) -> AttemptRecord:
    app = attempt.spark_app
    if app is None:
        return attempt
    link = history_link(base_url, app.app_id)
    return attempt.model_copy(update={"spark_app": app.model_copy(update={"history_url": link})})
