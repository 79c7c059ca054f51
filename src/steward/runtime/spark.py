"""The attempt's SparkSession: building it, reporting its micro-batches, stopping it.

This is the only runtime module that imports pyspark, and :class:`JobContext` imports it on the
first use of ``ctx.spark``, so a pipeline that never touches Spark never loads pyspark nor
starts a JVM.

- The master comes from the cluster (``local[*]`` by default; ``spark://``, ``yarn``,
  ``k8s://`` work through ``builder.master``, Spark Connect ``sc://`` through
  ``builder.remote``); the job's ``spark_conf`` is applied first, so the cluster's master and
  the app name ``steward-<job_id>-<attempt>`` win over it. Console progress bars are off
  (stdout is the attempt's log file) unless ``spark_conf`` turns them on.
- On Spark Connect the session is the attempt's own server-side session
  (:mod:`steward.runtime.connect`): the URL's ``session_id``, or ``SPARK_REMOTE``'s for the
  same server (the runner puts the attempt's there). If neither has one, the session id is
  derived here from the app name and the earlier attempts' sessions are fenced first (whoever
  picks the attempt's session id fences its predecessors). :func:`stop_session` interrupts the
  session's operations before releasing it.
- A warm spare runner builds its session early (:func:`new_session`, :func:`warm_up`) and
  hands it to its attempt with :func:`adopt_warm_session`: the job's SQL conf is set on the
  live session, and the app name stays the spare's (``spark.job.description`` names the
  attempt instead).
- The pipeline's modules are registered with cloudpickle to be pickled by value: Spark's
  Python workers cannot import a module that exists only in the attempt's artifact.
- A :class:`MicroBatchListener` turns every completed micro-batch of every streaming query
  into a checkpoint callback. Spark delivers listener events asynchronously, so
  :func:`drain_listener_events` waits for them before the runner writes its final event.
"""

from __future__ import annotations

import contextlib
import logging
import os
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

from steward.runtime import connect
from steward.wire.warm import DEFAULT_CONF, runtime_conf

log = logging.getLogger(__name__)

# Durations a progress report has only when its trigger ran a batch and committed it; an idle
# trigger reports only latestOffset and triggerExecution.
_BATCH_DURATIONS = ("addBatch", "commitOffsets")

MicroBatchCallback = Callable[[dict[str, Any]], None]
# Each trivial job of a young JVM is faster than the one before (class loading, then JIT).
_WARM_UP_JOBS = 5
# Fencing the earlier attempts' Connect sessions; stopping this attempt's operations.
_CONNECT_FENCE_TIMEOUT = 60.0
_CONNECT_STOP_TIMEOUT = 10.0
_CONNECT_CLIENT_KEYS = frozenset({"spark.master", "spark.remote"})


def app_name(job_id: str, attempt: int) -> str:
    return f"steward-{job_id}-{attempt}"


def spare_app_name() -> str:
    """A spare's session is built before its job is known."""
    return f"steward-spare-{os.getpid()}"


def build_session(
    *,
    master: str,
    name: str,
    conf: Mapping[str, str],
    on_micro_batch: MicroBatchCallback,
    modules: Iterable[ModuleType] = (),
) -> SparkSession:
    """Create the attempt's SparkSession and attach the micro-batch listener."""
    return attach(new_session(master=master, name=name, conf=conf), on_micro_batch, modules)


def new_session(*, master: str, name: str, conf: Mapping[str, str]) -> SparkSession:
    """A SparkSession on ``master`` with Steward's defaults, then ``conf``, named ``name``."""
    if connect.is_connect(master):
        return _new_connect_session(master, name, conf)
    builder = SparkSession.builder
    # stdout is a log file, not a terminal: no progress bars unless the job asks for them.
    for key, value in {**DEFAULT_CONF, **conf}.items():
        builder = builder.config(key, value)
    builder = builder.master(master)
    log.info("starting SparkSession master=%s app=%s", master, name)
    return builder.appName(name).getOrCreate()


def _new_connect_session(master: str, name: str, conf: Mapping[str, str]) -> SparkSession:
    """The attempt's session on a Connect server; ``conf`` is set on the server's session.

    PySpark refuses ``spark.master`` beside a Connect URL, and Steward's defaults are for a
    local JVM (the server owns its console): neither is passed.
    """
    url = _connect_url(master, name)
    builder = SparkSession.builder.remote(url)
    for key, value in conf.items():
        if key not in _CONNECT_CLIENT_KEYS and DEFAULT_CONF.get(key) != value:
            builder = builder.config(key, value)
    log.info("starting SparkSession remote=%s app=%s", url, name)
    return builder.appName(name).getOrCreate()


def _connect_url(master: str, name: str) -> str:
    """The attempt's Connect URL; its predecessors fenced if the session id is chosen here."""
    url = connect.attempt_url(master, os.environ)
    if connect.SESSION_ID in connect.url_params(url):
        return url
    job_id, attempt = _attempt_of(name)
    if attempt is None:
        return url  # not an attempt's session (a tool's, a test's): nothing to fence
    connect.interrupt_earlier_attempts(url, job_id, attempt, _CONNECT_FENCE_TIMEOUT)
    return connect.remote_url(url, job_id, attempt)


def _attempt_of(name: str) -> tuple[str, int | None]:
    """The inverse of :func:`app_name`: (job id, attempt), or (name, None)."""
    prefix, _, number = name.rpartition("-")
    if not name.startswith("steward-") or name.startswith("steward-spare-"):
        return name, None
    if not number.isdigit() or prefix == "steward":
        return name, None
    return prefix.removeprefix("steward-"), int(number)


def attach(
    session: SparkSession,
    on_micro_batch: MicroBatchCallback,
    modules: Iterable[ModuleType] = (),
) -> SparkSession:
    """Make ``session`` the attempt's: pickle its modules by value, report its micro-batches."""
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]  # untyped
    session.streams.addListener(MicroBatchListener(on_micro_batch))
    return session


def warm_up(session: SparkSession) -> None:
    """Pay now what a JVM's first jobs cost (seconds of class loading and JIT compiling).

    A few trivial jobs (a scan, a shuffle), plus what :func:`adopt_warm_session` will need:
    py4j's callback server (the micro-batch listener lives in Python) and the local file
    system. Nothing is written anywhere.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    session.range(16).selectExpr("id % 2 AS k").groupBy("k").count().collect()
    for _ in range(_WARM_UP_JOBS):
        session.range(1).count()
    ensure_callback_server_started(session.sparkContext._gateway)  # type: ignore[no-untyped-call]
    _follow_cwd(session)


def adopt_warm_session(
    session: SparkSession,
    *,
    name: str,
    conf: Mapping[str, str],
    on_micro_batch: MicroBatchCallback,
    modules: Iterable[ModuleType] = (),
) -> SparkSession:
    """Give a spare's warm session to the attempt ``name``: its SQL conf, its listener.

    The TaskManager hands a spare only to jobs whose ``spark_conf`` a live session can take
    (:func:`steward.wire.warm.cold_reason`); a key Spark still refuses is an error of
    that rule, reported as the attempt's failure rather than silently ignored.
    """
    for key, value in runtime_conf(conf).items():
        session.conf.set(key, value)
    _follow_cwd(session)
    # The SparkContext's name is fixed at start; jobs of the main thread carry the attempt's.
    session.sparkContext.setLocalProperty("spark.job.description", name)
    log.info("warm SparkSession adopted app=%s conf_keys=%s", name, sorted(runtime_conf(conf)))
    return attach(session, on_micro_batch, modules)


def _follow_cwd(session: SparkSession) -> None:
    """Resolve the JVM's relative paths against the attempt's folder, as in a cold runner.

    The JVM started in the spare's folder; Hadoop qualifies relative paths with the local
    file system's working directory, which comes from ``user.dir``.
    """
    cwd = os.getcwd()
    try:
        jvm = session.sparkContext._jvm
        assert jvm is not None
        jvm.java.lang.System.setProperty("user.dir", cwd)
        hadoop_conf = session.sparkContext._jsc.hadoopConfiguration()
        local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(hadoop_conf)
        local.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(cwd))
    except Exception as exc:
        log.warning("relative paths of the JVM stay in the spare's folder: %s", exc)


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
    if _is_connect_session(session):
        # Released sessions cancel their operations too, but a stop that fails (the server
        # unreachable) would leave them running: interrupt first, and wait for it.
        connect.interrupt_own(session, _CONNECT_STOP_TIMEOUT)
    try:
        session.stop()
    except Exception:
        log.exception("SparkSession.stop failed")


def active_session() -> SparkSession | None:
    """The session the pipeline built itself and left running, if any (classic or Connect)."""
    try:
        # The JVM's active session is per thread; the instantiated one is process-wide.
        found: SparkSession | None = SparkSession.getActiveSession()
        return found or SparkSession._instantiatedSession
    except Exception:  # a half-started session: nothing usable to stop
        log.exception("could not look up the active SparkSession")
        return None


def _is_connect_session(session: SparkSession) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")
