"""The Livy batch API's mapping logic: states, batch ids, the index's batch listing, a
request's fields into a job spec, the sources a batch may name, and basic auth's token.

Pure logic; the API itself, on real processes and driven by curl, is in
tests/e2e/cluster/test_livy.py.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from steward.jobmanager.indexed_job import IndexedJob
from steward.jobmanager.job_index import JobIndex
from steward.jobmanager.rest import livy_submit
from steward.jobmanager.rest.errors import ApiError
from steward.security.asgi import bearer_token
from steward.store import sources
from steward.wire.jobs import ProgramKind
from steward.wire.livy import (
    BATCH_STATES,
    MAX_BATCH_ID,
    BatchList,
    BatchState,
    batch_id_of,
    batch_job_id,
    parse_batch_id,
)
from steward.wire.rest import JobView
from steward.wire.states import JobState

LIVY_TERMINAL = {BatchState.SUCCESS, BatchState.DEAD, BatchState.KILLED}


def test_every_job_state_has_a_livy_state_terminal_exactly_when_steward_says_so() -> None:
    assert set(BATCH_STATES) == set(JobState)
    for state, livy in BATCH_STATES.items():
        assert (livy in LIVY_TERMINAL) == state.is_terminal, state
    assert BATCH_STATES[JobState.FINISHED] is BatchState.SUCCESS
    assert BATCH_STATES[JobState.FAILED] is BatchState.DEAD
    assert BATCH_STATES[JobState.CANCELED] is BatchState.KILLED


# Airflow's LivyHook parses a state with its own enum (BatchState): a name outside it fails
# the task that polls the batch.
AIRFLOW_BATCH_STATES = {
    "not_started",
    "starting",
    "running",
    "idle",
    "busy",
    "shutting_down",
    "error",
    "dead",
    "killed",
    "success",
}


def test_every_state_answered_is_one_airflows_livy_hook_knows() -> None:
    assert {state.value for state in BATCH_STATES.values()} <= AIRFLOW_BATCH_STATES


@pytest.mark.parametrize("batch_id", [0, 1, 42, MAX_BATCH_ID])
def test_a_batch_id_names_one_job_and_back(batch_id: int) -> None:
    assert batch_id_of(batch_job_id(batch_id)) == batch_id
    assert parse_batch_id(str(batch_id)) == batch_id


@pytest.mark.parametrize(
    "job_id", ["livy-01", "livy--1", "livy-", "livy-1x", "job-1", "livy-2147483648", "Livy-1"]
)
def test_other_jobs_have_no_batch_id(job_id: str) -> None:
    assert batch_id_of(job_id) is None


@pytest.mark.parametrize("text", ["", "-1", "1.0", "01", "x", "9" * 30, "1/log"])
def test_a_path_that_names_no_batch_is_refused(text: str) -> None:
    assert parse_batch_id(text) is None


def view(job_id: str, at: float) -> JobView:
    return JobView(job_id=job_id, state=JobState.RUNNING, submitted_at=at)


def test_the_index_pages_batches_by_offset_in_id_order_skipping_other_jobs() -> None:
    # Submitted out of id order (a standby noted a later one first), among other jobs.
    views = [view("etl-a", 1.0), view("livy-2", 2.0), view("livy-0", 3.0), view("livy-10", 4.0)]
    index = JobIndex.of([*views, view("livy-1", 5.0), view("livy-01", 6.0)])
    total, page = index.batches(1, 2)
    assert total == 4
    assert [job.job_id for job in page] == ["livy-1", "livy-2"]
    assert index.batches(3, 100) == (4, [index.get("livy-10")])
    assert index.batches(9, 10) == (4, [])


def test_the_index_keeps_its_batch_list_through_puts_updates_and_removals() -> None:
    index = JobIndex.of([])
    for n in (3, 1, 2):
        index.put(IndexedJob.of(JobView(job_id=f"livy-{n}", state=JobState.SUBMITTED)))
    finished = JobView(job_id="livy-2", state=JobState.FINISHED)
    index.put(IndexedJob.of(finished))  # an update is not a second entry
    total, page = index.batches(0, 10)
    assert total == 3 and [job.job_id for job in page] == ["livy-1", "livy-2", "livy-3"]
    assert page[1].state is JobState.FINISHED
    assert index.remove("livy-1")
    assert [job.job_id for job in index.batches(0, 10)[1]] == ["livy-2", "livy-3"]


def test_a_listing_is_livys_shape() -> None:
    listing = BatchList.model_validate({"from": 5, "total": 7, "sessions": []})
    assert listing.document() == {"from": 5, "total": 7, "sessions": []}


def test_sizing_fields_and_conf_become_spark_settings_and_the_file_runs_as_a_script() -> None:
    request = livy_submit.parse(
        json.dumps(
            {
                "file": "/jobs/etl.py",
                "args": ["--day", "2026-11-27", 3],
                "name": "etl",
                "driverMemory": "2g",
                "driverCores": 2,
                "executorMemory": "4g",
                "executorCores": 3,
                "numExecutors": 5,
                "queue": "batch",
                "conf": {"spark.ui.enabled": False, "spark.sql.shuffle.partitions": 8},
                "jars": None,
            }
        ).encode()
    )
    spec = livy_submit._spec(request, [])
    assert spec.spark_conf == {
        "spark.driver.memory": "2g",
        "spark.driver.cores": "2",
        "spark.executor.memory": "4g",
        "spark.executor.cores": "3",
        "spark.executor.instances": "5",
        "spark.yarn.queue": "batch",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "8",
    }
    assert spec.args == ["--day", "2026-11-27", "3"] and spec.name == "etl"
    assert spec.program is ProgramKind.SCRIPT


def test_spark_env_settings_set_the_drivers_environment_its_own_over_the_executors() -> None:
    conf = {
        "spark.executorEnv.TZ": "UTC",
        "spark.executorEnv.MODE": "executor",
        "spark.yarn.appMasterEnv.MODE": "yarn-driver",
        "spark.kubernetes.driverEnv.REGION": "eu",
        "spark.executor.memory": "2g",
    }
    request = livy_submit.parse(json.dumps({"file": "/jobs/etl.py", "conf": conf}).encode())
    spec = livy_submit._spec(request, [])
    assert spec.env == {"TZ": "UTC", "MODE": "yarn-driver", "REGION": "eu"}
    assert spec.spark_conf == conf  # still there for the executors Spark starts


@pytest.mark.parametrize(
    "key", ["spark.executorEnv.", "spark.executorEnv.1X", "spark.yarn.appMasterEnv.STEWARD_X"]
)
def test_a_spark_env_setting_that_names_no_variable_is_refused_naming_it(key: str) -> None:
    request = livy_submit.parse(json.dumps({"file": "/a.py", "conf": {key: "v"}}).encode())
    with pytest.raises(ApiError) as refused:
        livy_submit._spec(request, [])
    assert refused.value.status == 400
    assert f"conf: {key}:" in refused.value.body.message


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"file": "/a.py", "className": "org.example.Main"}', "className"),
        (b'{"args": []}', "file"),
        (b'{"file": null}', "file"),
        (b'{"file": "/a.py", "executorCores": 0}', "executorCores"),
        (b'{"file": "/a.py", "conf": {"k": [1]}}', "conf"),
        (b'{"file": "/a.py", "sparkVersion": "3"}', "sparkVersion"),
        (b'{"file": "/a.py",', "JSON"),
        (b"[1]", "object"),
    ],
)
def test_a_bad_request_is_refused_naming_what_is_wrong(body: bytes, named: str) -> None:
    with pytest.raises(ApiError) as refused:
        livy_submit.parse(body)
    assert refused.value.status == 400
    assert named in refused.value.body.message


def test_sources_outside_the_allowed_folders_are_refused(tmp_path: Path) -> None:
    allowed_dir = tmp_path / "jobs"
    allowed_dir.mkdir()
    (allowed_dir / "etl.py").write_text("print(1)\n")
    (tmp_path / "secret").write_text("s3cr3t\n")
    os.symlink(tmp_path / "secret", allowed_dir / "link.py")
    allowed = sources.allowed_prefixes(f"{allowed_dir}, s3://bucket/jobs/")
    for source in (
        str(allowed_dir / "etl.py"),
        f"file://{allowed_dir}/etl.py",
        f"local:{allowed_dir}/etl.py",
    ):
        assert sources.read_bytes("file", source, allowed, 100) == ("etl.py", b"print(1)\n")
    refused = [
        str(tmp_path / "secret"),
        str(allowed_dir / "link.py"),  # a symlink out of the folder
        f"{allowed_dir}/../secret",
        f"{allowed_dir}sibling/x.py",  # a folder whose name merely starts the same
        "relative/etl.py",
        "s3://bucket/other/x.py",
        "s3://bucket/jobs/../other/x.py",
    ]
    for source in refused:
        with pytest.raises(sources.SourceError, match=r"^file: "):
            sources.read_bytes("file", source, allowed, 100)


def test_no_source_is_allowed_by_default(tmp_path: Path) -> None:
    (tmp_path / "etl.py").write_text("print(1)\n")
    with pytest.raises(sources.SourceError, match="allowed-sources: none"):
        sources.read_bytes("file", str(tmp_path / "etl.py"), sources.allowed_prefixes(""), 100)


def test_a_source_over_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_bytes(b"x" * 101)
    allowed = sources.allowed_prefixes(str(tmp_path))
    with pytest.raises(sources.SourceError, match="larger than 100 bytes"):
        sources.read_bytes("file", str(tmp_path / "big.py"), allowed, 100)


def _scope(header: str) -> dict[str, object]:
    return {"headers": [(b"authorization", header.encode("latin-1"))]}


def test_basic_auth_carries_the_token_as_its_password() -> None:
    basic = base64.b64encode(b"airflow:stw_abc:def").decode()
    assert bearer_token(_scope(f"Basic {basic}")) == "stw_abc:def"
    assert bearer_token(_scope("Bearer stw_abc")) == "stw_abc"
    assert bearer_token(_scope("Basic not-base64!")) is None
    assert bearer_token(_scope(f"Basic {base64.b64encode(b'no-colon').decode()}")) is None
    assert bearer_token(_scope("Digest x")) is None
