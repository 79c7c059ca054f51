"""Spark event logs of every attempt, and links to their runs in a Spark History Server.

Who decides: the TaskManager, from its configuration (:func:`event_log_dir`). It creates the
folder (Spark refuses to start on a missing one) and hands the folder to every attempt, in the
launch document for a cold runner and through the spares' Spark defaults for a warm one, so
that both write the same event log (:func:`event_log_conf`). A job's own ``spark.eventLog.*``
wins over both; such a job goes to a cold runner, as any JVM setting does
(:func:`steward.wire.warm.cold_reason`).

This module does not import pyspark.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: an attempt's runner imports this module, not the config's models
    from steward.config.settings import HistorySettings

log = logging.getLogger(__name__)

EVENT_LOG_ENABLED = "spark.eventLog.enabled"
EVENT_LOG_DIR = "spark.eventLog.dir"
EVENTS_FOLDER = "spark-events"
_LOCAL = "file://"


def event_log_dir(history: HistorySettings, storage_dir: str) -> str | None:
    """The folder attempts write event logs to, or None when they write none."""
    if not history.event_log_enabled:
        return None
    if history.event_log_dir:
        return history.event_log_dir
    if storage_dir.startswith(_LOCAL):
        return storage_dir.rstrip("/") + "/" + EVENTS_FOLDER
    # Spark reaches S3 only through hadoop-aws (s3a://), which pyspark does not ship.
    return None


def prepare(history: HistorySettings, storage_dir: str) -> str | None:
    """At a TaskManager's start: the event-log folder, created; logs what was chosen and why."""
    folder = event_log_dir(history, storage_dir)
    if folder is not None:
        ensure_folder(folder)
        log.info("spark event logs on dir=%s", folder)
    elif history.event_log_enabled:
        log.warning(
            "spark event logs off storage=%s reason=%s",
            storage_dir.partition("://")[0] + "://",
            "pyspark ships no hadoop-aws for s3a://; set history.event-log.dir to turn them on",
        )
    else:
        log.info("spark event logs off reason=history.event-log.enabled=false")
    return folder


def event_log_conf(folder: str | None) -> dict[str, str]:
    """The Spark settings that write event logs into ``folder`` (none for None)."""
    if folder is None:
        return {}
    return {EVENT_LOG_ENABLED: "true", EVENT_LOG_DIR: folder}


def ensure_folder(folder: str) -> None:
    """Create a local event-log folder; a remote one is the operator's to create."""
    if folder.startswith(_LOCAL):
        Path(folder.removeprefix(_LOCAL)).mkdir(parents=True, exist_ok=True)
    elif "://" not in folder:
        Path(folder).mkdir(parents=True, exist_ok=True)


def history_server_url(history: HistorySettings) -> str | None:
    """The History Server's base URL that job views link to, or None for no link."""
    if history.server_url:
        return history.server_url.rstrip("/")
    if history.server_enabled:
        return f"http://127.0.0.1:{history.server_port}"
    return None


def history_link(base_url: str | None, app_id: str | None) -> str | None:
    """``<base>/history/<app-id>``: the run in the History Server, or None."""
    if base_url is None or not app_id:
        return None
    return f"{base_url}/history/{app_id}"
