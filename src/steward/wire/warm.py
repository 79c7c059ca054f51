"""Which jobs may run on a warm spare runner, whose SparkSession already exists.

A spare's session was built with the cluster's master and Steward's default conf before any
job was known (see "Warm runners" in :mod:`steward.wire.runner_protocol`). Only what Spark lets a
live session change can still be applied at handover: SQL confs that are not static
(``spark.conf.set``). Anything read when the SparkContext or its JVM starts (memory, cores,
jars, packages, extensions, the catalog, ``spark.hadoop.*``, the master) needs a cold runner.

Both sides read it: the TaskManager picks a spare or a cold runner, the runner applies the
same defaults and runtime conf at handover. It decides without a JVM (the TaskManager never
imports pyspark), conservatively:
a key that is not clearly a runtime SQL conf sends the job to a cold runner, which always
works. ``STATIC_SQL_CONFS`` is the static SQL conf list of the pinned Spark (4.3);
``tests/e2e/runtime/test_warm_runner.py`` checks it against the running JVM's own list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from steward.wire.redaction import DEFAULT as DEFAULT_RULE

if TYPE_CHECKING:
    from steward.wire.runner_protocol import LaunchDocument

SPARK_MASTER = "spark.master"
APP_NAME = "spark.app.name"
CONSOLE_PROGRESS = "spark.ui.showConsoleProgress"
CONNECT_SCHEME = "sc://"

DEFAULT_CONF: Mapping[str, str] = {CONSOLE_PROGRESS: "false"}
"""The conf every Steward session gets unless the job says otherwise (stdout is a log file)."""

STATIC_SQL_CONFS = frozenset(
    {
        "spark.python.sql.dataFrameDebugging.enabled",
        "spark.sql.artifact.copyFromLocalToFs.allowDestLocal",
        "spark.sql.avro.schemaUrlAllowedSchemes",
        "spark.sql.broadcastExchange.maxThreadThreshold",
        "spark.sql.cache.serializer",
        "spark.sql.catalog.spark_catalog.defaultDatabase",
        "spark.sql.catalogImplementation",
        "spark.sql.codegen.cache.maxEntries",
        "spark.sql.codegen.comments",
        "spark.sql.debug",
        "spark.sql.defaultUrlStreamHandlerFactory.enabled",
        "spark.sql.event.truncate.length",
        "spark.sql.extensions",
        "spark.sql.extensions.test.loadFromCp",
        "spark.sql.filesourceTableRelationCacheSize",
        "spark.sql.globalTempDatabase",
        "spark.sql.hive.thriftServer.http.sniHostCheckEnabled",
        "spark.sql.hive.thriftServer.singleSession",
        "spark.sql.kafka.disallowedOptions",
        "spark.sql.legacy.hive.thriftServer.allowSettingSystemProperties",
        "spark.sql.legacy.sessionInitWithConfigDefaults",
        "spark.sql.metadataCacheTTLSeconds",
        "spark.sql.queryExecutionListeners",
        "spark.sql.reflect.allowList",
        "spark.sql.restrictedMode.enabled",
        "spark.sql.resultQueryStage.maxThreadThreshold",
        "spark.sql.shuffleExchange.maxThreadThreshold",
        "spark.sql.sources.disabledJdbcConnProviderList",
        "spark.sql.sources.schemaStringLengthThreshold",
        "spark.sql.streaming.streamingQueryListeners",
        "spark.sql.streaming.ui.enabled",
        "spark.sql.streaming.ui.enabledCustomMetricList",
        "spark.sql.streaming.ui.retainedProgressUpdates",
        "spark.sql.streaming.ui.retainedQueries",
        "spark.sql.subquery.maxThreadThreshold",
        "spark.sql.warehouse.dir",
    }
)

# Families read once at start-up, whose members Spark registers lazily (a key of theirs may be
# missing from the JVM's list until its module loads): never settable on a live session.
_STATIC_PREFIXES = ("spark.sql.hive.", "spark.sql.extensions", "spark.sql.streaming.ui.")


def is_runtime_sql_conf(key: str) -> bool:
    """True if ``spark.conf.set(key, ...)`` on a live session means what the builder would."""
    if not key.startswith("spark.sql.") or key in STATIC_SQL_CONFS:
        return False
    return not key.startswith(_STATIC_PREFIXES)


def cold_reason(spark_conf: Mapping[str, str], job_master: str, warm_master: str) -> str | None:
    """Why a job with ``spark_conf`` and master ``job_master`` needs a cold runner, or None.

    ``warm_master`` is the master the spares' sessions were built with.
    """
    if job_master != warm_master:
        # A master URL may carry a token (sc://host/;token=...): never shown.
        job, warm = DEFAULT_RULE.text(job_master), DEFAULT_RULE.text(warm_master)
        return f"the job's Spark master {job!r} is not the spares' {warm!r}"
    if job_master.startswith(CONNECT_SCHEME):
        return "a Spark Connect master starts no local JVM to keep warm"
    for key, value in spark_conf.items():
        if key == APP_NAME or (key == SPARK_MASTER and value == warm_master):
            continue  # Steward names the app itself; the master matches
        if key in DEFAULT_CONF:
            if value == DEFAULT_CONF[key]:
                continue
            shown = DEFAULT_RULE.conf({key: value})[key]
            return f"spark_conf {key}={shown!r} differs from the spares' default"
        if not is_runtime_sql_conf(key):
            return f"spark_conf {key} cannot be changed on a live SparkSession"
    return None


def files_cold_reason(launch: LaunchDocument) -> str | None:
    """Why a job's files, Python environment or environment variables need a cold runner,
    or None.

    A spare's JVM started without the job's jars and Python files, and its driver with the
    TaskManager's Python packages: what spark-submit would pass at launch cannot be added
    to it afterwards with the same meaning.
    """
    if launch.python_env is not None:
        return "the job has its own Python environment"
    if launch.spec.env:
        return "the job sets environment variables, which its driver must start with"
    if launch.dependencies:
        return f"the job names {len(launch.dependencies)} file(s) the JVM must start with"
    return None


def runtime_conf(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The part of a warm-compatible ``spark_conf`` that is applied with ``spark.conf.set``."""
    return {key: value for key, value in spark_conf.items() if is_runtime_sql_conf(key)}
