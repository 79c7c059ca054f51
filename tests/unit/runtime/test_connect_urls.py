"""The attempt's Spark Connect session id and URL (no server: see tests/e2e/spark_cluster/)."""

from __future__ import annotations

import uuid

import pytest

from steward.runtime import connect
from steward.runtime.spark import _attempt_of, app_name


def test_session_id_is_a_uuid_fixed_per_job_attempt_and_scope() -> None:
    first = connect.session_id("wc", 1)
    assert uuid.UUID(first).version == 5
    assert connect.session_id("wc", 1) == first
    assert connect.session_id("wc", 2) != first
    assert connect.session_id("wc", 1, scope="file:///other/cluster") != first
    assert connect.session_id("wc-1", 1) != connect.session_id("wc", 11)


def test_remote_url_adds_the_session_id_and_keeps_other_parameters() -> None:
    url = connect.remote_url("sc://h:15002/;user_id=ana;token=t", "wc", 3)
    assert url == f"sc://h:15002/;user_id=ana;token=t;session_id={connect.session_id('wc', 3)}"
    assert connect.remote_url("sc://h:15002", "wc", 3) == connect.remote_url(
        "sc://h:15002/", "wc", 3
    )


def test_remote_url_replaces_a_session_id_of_the_master() -> None:
    url = connect.remote_url("sc://h:1/;session_id=fixed", "wc", 2)
    assert connect.url_params(url) == {"session_id": connect.session_id("wc", 2)}


def test_remote_url_refuses_a_master_that_is_not_spark_connect() -> None:
    with pytest.raises(ValueError, match="not a Spark Connect URL"):
        connect.remote_url("spark://h:7077", "wc", 1)


def test_attempt_url_prefers_the_master_then_spark_remote_of_the_same_server() -> None:
    remote = connect.remote_url("sc://h:1", "wc", 4)
    assert connect.attempt_url("sc://h:1", {"SPARK_REMOTE": remote}) == remote
    assert connect.attempt_url("sc://other:1", {"SPARK_REMOTE": remote}) == "sc://other:1"
    assert connect.attempt_url("sc://h:1", {"SPARK_REMOTE": "sc://h:1"}) == "sc://h:1"
    named = "sc://h:1/;session_id=abc"
    assert connect.attempt_url(named, {"SPARK_REMOTE": remote}) == named


def test_app_name_gives_back_job_and_attempt() -> None:
    assert _attempt_of(app_name("my-job-7", 12)) == ("my-job-7", 12)
    assert _attempt_of("steward-spare-4242")[1] is None
    assert _attempt_of("etl")[1] is None
