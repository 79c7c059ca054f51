"""Spark event logs of an attempt: where they go, what the session is built with, the
History Server link (steward.sparkconf.event_log, session_settings, the job view's links)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.cluster.history_server import properties
from steward.config import load
from steward.config.settings import HistorySettings
from steward.errors import ConfigurationError
from steward.jobmanager.rest.history import with_history_links
from steward.sparkconf import event_log
from steward.sparkconf.event_log import (
    EVENT_LOG_DIR,
    EVENT_LOG_ENABLED,
    event_log_conf,
    event_log_dir,
    history_server_url,
)
from steward.sparkconf.session_settings import settings
from steward.wire.jobs import JobSpec
from steward.wire.records import AttemptRecord, SparkApp
from steward.wire.rest import JobView
from steward.wire.runner_protocol import LaunchDocument
from steward.wire.states import AttemptState, JobState
from steward.wire.warm import cold_reason

LOCAL = "file:///srv/steward/storage"


def history(**changes: object) -> HistorySettings:
    fields: dict[str, object] = {
        "event_log_enabled": True,
        "event_log_dir": "",
        "server_enabled": False,
        "server_port": 18080,
        "server_url": "",
    }
    return HistorySettings(**{**fields, **changes})  # type: ignore[arg-type]


def launch(
    spark_conf: dict[str, str], folder: str | None, master: str = "local[2]"
) -> LaunchDocument:
    return LaunchDocument(
        spark_master=master,
        job_id="j",
        attempt=1,
        epoch=1,
        spec=JobSpec(job_id="j", spark_conf=spark_conf),
        artifact_path="/a/p.py",
        checkpoint_dir="/c",
        deadman_timeout=2.0,
        event_log_dir=folder,
    )


def test_event_logs_are_on_by_default_under_a_local_storage() -> None:
    config = load(environ={}, overrides={"high-availability.storage-dir": LOCAL})
    folder = event_log_dir(config.settings.history, config.settings.storage.storage_dir)
    assert folder == f"{LOCAL}/spark-events"


def test_an_s3_storage_writes_no_event_log_unless_a_folder_is_configured() -> None:
    assert event_log_dir(history(), "s3://bucket/steward") is None
    chosen = history(event_log_dir="s3a://bucket/events")
    assert event_log_dir(chosen, "s3://bucket/steward") == "s3a://bucket/events"


def test_event_logs_can_be_turned_off() -> None:
    assert event_log_dir(history(event_log_enabled=False), LOCAL) is None
    assert event_log_conf(None) == {}


def test_the_taskmanager_creates_a_local_event_log_folder(tmp_path: Path) -> None:
    storage = f"file://{tmp_path}/storage"
    folder = event_log.prepare(history(), storage)
    assert folder == f"{storage}/spark-events"
    assert (tmp_path / "storage" / "spark-events").is_dir()


def test_the_session_writes_the_event_log_the_launch_names() -> None:
    conf = settings(launch({}, "file:///e"))
    assert conf[EVENT_LOG_ENABLED] == "true"
    assert conf[EVENT_LOG_DIR] == "file:///e"
    assert EVENT_LOG_ENABLED not in settings(launch({}, None))


def test_a_spark_connect_session_is_not_given_the_taskmanagers_event_log() -> None:
    conf = settings(launch({}, "file:///e", master="sc://connect:15002"))
    assert EVENT_LOG_ENABLED not in conf and EVENT_LOG_DIR not in conf


def test_the_jobs_own_event_log_settings_win() -> None:
    off = settings(launch({EVENT_LOG_ENABLED: "false"}, "file:///e"))
    assert off[EVENT_LOG_ENABLED] == "false"
    moved = settings(launch({EVENT_LOG_DIR: "hdfs://nn/logs"}, "file:///e"))
    assert (moved[EVENT_LOG_ENABLED], moved[EVENT_LOG_DIR]) == ("true", "hdfs://nn/logs")


def test_a_job_with_its_own_event_log_settings_is_not_given_a_warm_spare() -> None:
    # A spare's JVM started with the TaskManager's event log: it cannot change it any more.
    reason = cold_reason({EVENT_LOG_DIR: "hdfs://nn/logs"}, "local[2]", "local[2]")
    assert reason is not None and EVENT_LOG_DIR in reason


def test_the_history_server_url_is_configured_or_derived() -> None:
    assert history_server_url(history()) is None
    assert history_server_url(history(server_enabled=True)) == "http://127.0.0.1:18080"
    configured = history(server_url="https://history.example.com/")
    assert history_server_url(configured) == "https://history.example.com"


def test_a_history_server_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"history\.server\.url"):
        load(environ={}, overrides={"history.server.url": "javascript:alert(1)"})


def view(*apps: SparkApp | None) -> JobView:
    attempts = [
        AttemptRecord(number=n, taskmanager="tm-1", epoch=1, state=AttemptState.FINISHED,
                      spark_app=app)
        for n, app in enumerate(apps, start=1)
    ]  # fmt: skip
    return JobView(job_id="j", state=JobState.FINISHED, attempts=attempts)


def test_each_attempt_links_its_application_in_the_history_server() -> None:
    linked = with_history_links(view(None, SparkApp(app_id="local-17")), "http://h:18080")
    first, second = linked.attempts
    assert first.spark_app is None
    assert second.spark_app is not None
    assert second.spark_app.history_url == "http://h:18080/history/local-17"


def test_no_link_without_a_history_server() -> None:
    unlinked = with_history_links(view(SparkApp(app_id="local-17")), None)
    assert unlinked.attempts[0].spark_app is not None
    assert unlinked.attempts[0].spark_app.history_url is None


def test_the_history_server_reads_the_event_log_folder_on_its_port() -> None:
    text = properties("file:///srv/events", 18081)
    assert "spark.history.fs.logDirectory=file:///srv/events\n" in text
    assert "spark.history.ui.port=18081\n" in text
