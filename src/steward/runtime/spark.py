"""The attempt's SparkSession: building it, reporting its micro-batches, stopping it.

This is the only runtime module that imports pyspark, and :class:`JobContext` imports it on the
first use of ``ctx.spark``, so a pipeline that never touches Spark never loads pyspark nor
starts a JVM.

- The master comes from the cluster (``local[*]`` by default; ``spark://``, ``yarn``,
  ``k8s://`` work through ``builder.master``, Spark Connect ``sc://`` through
  ``builder.remote``); the job's ``spark_conf`` is applied first, so the cluster's master and
  the app name ``steward-<job_id>-<attempt>`` win over it. Console progress bars are off
  (stdout is the attempt's log file) unless ``spark_conf`` turns them on.
- The pipeline's modules are registered with cloudpickle to be pickled by value: Spark's
  Python workers cannot import a module that exists only in the attempt's artifact.
- A :class:`MicroBatchListener` turns every completed micro-batch of every streaming query
  into a checkpoint callback. Spark delivers listener events asynchronously, so
  :func:`drain_listener_events` waits for them before the runner writes its final event.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import (
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

log = logging.getLogger(__name__)

CONNECT_SCHEME = "sc://"
# Durations a progress report has only when its trigger ran a batch and committed it; an idle
# trigger reports only latestOffset and triggerExecution.
_BATCH_DURATIONS = ("addBatch", "commitOffsets")

MicroBatchCallback = Callable[[dict[str, Any]], None]


def app_name(job_id: str, attempt: int) -> str:
    return f"steward-{job_id}-{attempt}"


def build_session(
    *,
    master: str,
    name: str,
    conf: Mapping[str, str],
    on_micro_batch: MicroBatchCallback,
    modules: Iterable[ModuleType] = (),
) -> SparkSession:
    """Create the attempt's SparkSession and attach the micro-batch listener."""
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]  # untyped
    builder = SparkSession.builder
    # stdout is a log file, not a terminal: no progress bars unless the job asks for them.
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in conf.items():
        builder = builder.config(key, value)
    if master.startswith(CONNECT_SCHEME):
        builder = builder.remote(master)
    else:
        builder = builder.master(master)
    log.info("starting SparkSession master=%s app=%s", master, name)
    session = builder.appName(name).getOrCreate()
    session.streams.addListener(MicroBatchListener(on_micro_batch))
    return session


class MicroBatchListener(StreamingQueryListener):
    """Calls back once per completed micro-batch of any query of the session."""

    def __init__(self, on_micro_batch: MicroBatchCallback) -> None:
        self._on_micro_batch = on_micro_batch
        self._last_batch: dict[str, int] = {}

    def onQueryStarted(self, event: QueryStartedEvent) -> None:  # noqa: N802  (Spark's name)
        log.info("streaming query started id=%s run=%s name=%s", event.id, event.runId, event.name)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:  # noqa: N802  (Spark's name)
        # Called on a py4j (or Spark Connect) thread: nothing may escape into Spark.
        try:
            progress = event.progress
            if not any(key in progress.durationMs for key in _BATCH_DURATIONS):
                return
            run_id = str(progress.runId)
            if progress.batchId <= self._last_batch.get(run_id, -1):
                return
            self._last_batch[run_id] = progress.batchId
            self._on_micro_batch(
                {
                    "kind": "micro-batch",
                    "query_id": str(progress.id),
                    "query_name": progress.name,
                    "run_id": run_id,
                    "batchId": progress.batchId,
                    "numInputRows": progress.numInputRows,
                    "timestamp": progress.timestamp,
                }
            )
        except Exception:
            log.exception("could not report a micro-batch")

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:  # noqa: N802  (Spark's name)
        log.info("streaming query terminated id=%s exception=%s", event.id, event.exception)


def drain_listener_events(session: SparkSession, timeout: float) -> None:
    """Wait until Spark has delivered its pending listener events (classic Spark only)."""
    try:
        context = session.sparkContext
    except Exception:  # Spark Connect has no SparkContext; its listener bus is client-side
        return
    try:
        # LiveListenerBus.waitUntilEmpty is private[spark] in Scala, public to py4j.
        context._jsc.sc().listenerBus().waitUntilEmpty(int(timeout * 1000))
    except Exception as exc:
        log.warning("listener events not drained within %.1fs: %s", timeout, exc)


def stop_session(session: SparkSession) -> None:
    """Stop the queries the pipeline left running, then the session; log, never raise."""
    with contextlib.suppress(Exception):
        for query in session.streams.active:
            log.info("stopping streaming query id=%s left running by the pipeline", query.id)
            query.stop()
    try:
        session.stop()
    except Exception:
        log.exception("SparkSession.stop failed")
