"""Noticing the attempt's Spark application, whoever started it.

A script builds its SparkSession itself, at a time the runner does not know, so the runner
watches instead of being told: a daemon thread looks for PySpark's active SparkContext
every half second (never importing pyspark itself: a pipeline without Spark starts no JVM)
and reports each new application once as a
:class:`~steward.wire.runner_protocol.SparkAppEvent`. Spark Connect sessions have no local
SparkContext and are not reported.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

from steward.runtime.channel import EventSink
from steward.wire.records import SparkApp
from steward.wire.redaction import DEFAULT as DEFAULT_RULE
from steward.wire.runner_protocol import SparkAppEvent

log = logging.getLogger(__name__)

INTERVAL = 0.5


class SparkAppWatcher:
    """Reports the attempt's SparkContext (its id, UI and master) once it exists."""

    def __init__(self, events: EventSink, interval: float = INTERVAL) -> None:
        self._events = events
        self._interval = interval
        self._stopped = threading.Event()
        self._reported: str | None = None
        self._seen: object | None = None  # the SparkContext last reported: no JVM call again
        self._thread = threading.Thread(target=self._run, name="spark-app-watch", daemon=True)

    def start(self) -> SparkAppWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self.check()
            except Exception:  # py4j can fail while the context stops: try again later
                log.debug("could not read the SparkContext", exc_info=True)

    def check(self) -> SparkApp | None:
        """Report the current application if it is new; returns it (None when unchanged)."""
        context = active_context()
        if context is None or context is self._seen:
            return None
        app = describe(context)
        self._seen = context
        if app.app_id != self._reported:
            self._reported = app.app_id
            log.info("spark application app_id=%s ui=%s", app.app_id, app.ui_url)
            self._events.emit(SparkAppEvent(app=app))
        return app


def active_context() -> Any:
    """PySpark's running SparkContext, if pyspark is loaded and one runs (no JVM call)."""
    pyspark = sys.modules.get("pyspark")
    context_class = getattr(pyspark, "SparkContext", None)
    return getattr(context_class, "_active_spark_context", None)


def describe(context: Any) -> SparkApp:
    """The application of ``context`` (three calls into its JVM)."""
    return SparkApp(
        app_id=str(context.applicationId),
        ui_url=context.uiWebUrl or None,
        master=DEFAULT_RULE.text(str(context.master))[:2048],  # a URL may carry a token
    )
