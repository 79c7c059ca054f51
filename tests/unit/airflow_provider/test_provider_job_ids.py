"""The job id a task instance gets: deterministic, valid under Steward's rule, distinct."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steward.wire.values import check_job_id
from steward_airflow.job_ids import check_job_id as provider_check
from steward_airflow.job_ids import task_job_id


def test_the_id_reads_as_the_task_instance_and_is_stable() -> None:
    job_id = task_job_id("nightly", "count_words", "manual__2026-11-27T09:32:21+00:00")
    assert job_id.startswith("nightly.count_words.manual__2026-11-27T09-32-21-00-00-")
    assert job_id == task_job_id("nightly", "count_words", "manual__2026-11-27T09:32:21+00:00")
    assert len(job_id.rsplit("-", 1)[1]) == 16


def test_map_index_and_every_part_change_the_id() -> None:
    base = ("dag", "task", "run")
    ids = {
        task_job_id(*base),
        task_job_id(*base, 0),
        task_job_id(*base, 1),
        task_job_id("dag2", "task", "run"),
        task_job_id("dag", "task2", "run"),
        task_job_id("dag", "task", "run2"),
    }
    assert len(ids) == 6
    assert ".0.run-" in task_job_id(*base, 0)


def test_names_that_clean_to_the_same_text_still_differ() -> None:
    assert task_job_id("a:b", "t", "r") != task_job_id("a-b", "t", "r")
    long_run = "scheduled__" + "x" * 300
    assert task_job_id("d", "t", long_run + "1") != task_job_id("d", "t", long_run + "2")


@given(
    st.text(min_size=1, max_size=300),
    st.text(min_size=1, max_size=300),
    st.text(min_size=1, max_size=300),
    st.integers(min_value=-1, max_value=100_000),
)
def test_every_task_instance_gets_an_id_steward_accepts(
    dag_id: str, task_id: str, run_id: str, map_index: int
) -> None:
    job_id = task_job_id(dag_id, task_id, run_id, map_index)
    assert check_job_id(job_id) == job_id
    assert provider_check(job_id) == job_id


def test_the_providers_rule_is_stewards() -> None:
    for bad in ("", "-x", "a/b", "x" * 129, "a b"):
        with pytest.raises(ValueError):
            check_job_id(bad)
        with pytest.raises(ValueError, match="invalid Steward job id"):
            provider_check(bad)
