"""The ``history.*`` keys: Spark event logs of every attempt and a Spark History Server."""

from __future__ import annotations

from steward.config.option import Option
from steward.config.units import to_bool, to_int, to_str


def _port(value: int) -> str | None:
    return None if 0 < value < 65536 else "must be a TCP port (1-65535)"


def _url(value: str) -> str | None:
    if value and not value.startswith(("http://", "https://")):
        return "must be an http:// or https:// URL (empty: derived from history.server.*)"
    return None


HISTORY_OPTIONS: tuple[Option, ...] = (
    Option(
        "history.event-log.enabled",
        to_bool,
        True,
        "Every attempt's Spark session writes its event log (`spark.eventLog.enabled`,"
        " `spark.eventLog.dir`) so that a Spark History Server shows the run after its driver is"
        " gone. A job's own `spark.eventLog.*` settings win. With an `s3://` storage and no"
        " `history.event-log.dir`, event logs stay off: pyspark ships no hadoop-aws for `s3a://`"
        " (the TaskManager logs so at start). See"
        " [operations.md](operations.md#spark-history).",
        setting="history.event_log_enabled",
    ),
    Option(
        "history.event-log.dir",
        to_str,
        "",
        "Where the event logs go, a URL Spark's Hadoop file systems can write (`file:///...`,"
        " `hdfs://...`, `s3a://...` with hadoop-aws on the classpath). Empty:"
        " `<high-availability.storage-dir>/spark-events` for a `file://` storage. A local"
        " folder is created by the TaskManager at start (Spark refuses a missing one).",
        setting="history.event_log_dir",
    ),
    Option(
        "history.server.enabled",
        to_bool,
        False,
        "`steward cluster start` also starts Spark's own History Server (from the jars pyspark"
        " ships) reading the event-log folder, and `steward cluster stop` stops it. Off by"
        " default: it is one more JVM (about 300 MB) on the machine.",
        setting="history.server_enabled",
    ),
    Option(
        "history.server.port",
        to_int,
        18080,
        "The History Server's port (`spark.history.ui.port`).",
        _port,
        setting="history.server_port",
    ),
    Option(
        "history.server.url",
        to_str,
        "",
        "The History Server's base URL that job views link to (`<url>/history/<app-id>`)."
        " Empty: `http://127.0.0.1:<history.server.port>` when `history.server.enabled`, else"
        " no link.",
        _url,
        setting="history.server_url",
    ),
)
