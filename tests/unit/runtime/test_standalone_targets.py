"""What a successor attempt kills on a standalone master: which masters it asks, which
applications are its job's earlier attempts (no master: the kill itself is tested against a
real one in tests/e2e/partition/test_standalone_cut_off.py)."""

from __future__ import annotations

import socket

import pytest

from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.scheduler import earlier_spark_apps
from steward.runtime import standalone
from steward.sparkconf.session_settings import app_name
from steward.wire.jobs import JobGraphPointer, JobSpec
from steward.wire.records import MAX_EARLIER_APPS, AttemptRecord, JobStatusRecord, SparkApp
from steward.wire.states import AttemptState, JobState


def test_only_spark_urls_are_standalone_masters() -> None:
    assert standalone.is_standalone("spark://10.0.0.1:7077")
    for master in ("local[*]", "yarn", "k8s://https://h:6443", "sc://h:15002"):
        assert not standalone.is_standalone(master)


@pytest.mark.parametrize(
    ("master", "conf", "expected"),
    [
        ("spark://m:7077", {}, ["http://m:8080"]),
        ("spark://m:7077", {"spark.master.ui.port": "18080"}, ["http://m:18080"]),
        ("spark://a:7077,b:7078", {}, ["http://a:8080", "http://b:8080"]),
    ],
)
def test_the_master_web_ui_is_each_master_host_on_the_ui_port(
    master: str, conf: dict[str, str], expected: list[str]
) -> None:
    assert standalone.ui_urls(master, conf) == expected


def test_a_master_ui_that_does_not_answer_fails_the_attempt_naming_the_port_setting() -> None:
    # A port nothing listens on: the job's master has its web UI elsewhere (not 8080).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = {"spark.master.ui.port": str(port)}

    with pytest.raises(standalone.StandaloneFencingError) as caught:
        standalone.kill_earlier_applications(
            "spark://127.0.0.1:7077", conf, known_ids=(), names={"steward-wc-1"}, timeout=0.0
        )

    message = str(caught.value)
    assert f"http://127.0.0.1:{port}: no answer" in message
    assert "spark.master.ui.port, 8080 when unset" in message


def test_earlier_names_are_stewards_names_of_the_attempts_before() -> None:
    assert standalone.earlier_app_names("wc", 1) == set()
    assert standalone.earlier_app_names("wc", 3) == {app_name("wc", 1), app_name("wc", 2)}


def _master(apps: dict[int, str | None]) -> JobMaster:
    attempts = [
        AttemptRecord(
            number=number,
            taskmanager="tm-1",
            epoch=1,
            state=AttemptState.LOST,
            spark_app=SparkApp(app_id=app_id) if app_id else None,
        )
        for number, app_id in apps.items()
    ]
    record = JobStatusRecord(
        job_id="wc",
        state=JobState.SCHEDULED,
        submitted_at=1.0,
        updated_at=2.0,
        attempts=attempts,
        attempt_count=len(attempts),
        epoch=1,
    )
    spec = JobSpec(job_id="wc")
    pointer = JobGraphPointer(blob="jobgraphs/wc/a", sha256="0" * 64, epoch=1)
    return JobMaster(spec, pointer, submitted_at=1.0, record=record)


def test_a_start_names_the_recorded_apps_of_the_earlier_attempts_only() -> None:
    master = _master({1: "app-1", 2: None, 3: "app-3", 4: "app-4"})
    assert earlier_spark_apps(master, 4) == ["app-1", "app-3"]
    assert earlier_spark_apps(master, 1) == []


def test_a_start_names_at_most_the_latest_apps_kept() -> None:
    master = _master({n: f"app-{n}" for n in range(1, MAX_EARLIER_APPS + 6)})
    ids = earlier_spark_apps(master, MAX_EARLIER_APPS + 6)
    assert len(ids) == MAX_EARLIER_APPS and ids[-1] == f"app-{MAX_EARLIER_APPS + 5}"
