"""New job ids (wire/values.py): one format, whether the client or the leader makes them."""

from __future__ import annotations

import re

import pytest

from steward.client.packaging import default_job_id
from steward.wire.values import MAX_ID_STEM, check_job_id, new_job_id

FORMAT = re.compile(r"(?P<stem>.+)-[0-9a-f]{12}")


@pytest.mark.parametrize(
    ("stem", "kept"),
    [
        ("wordcount", "wordcount"),
        ("daily sales (v2)", "daily-sales-v2"),
        ("café_über", "caf-_-ber"),  # ids are ASCII: a letter outside it is not one
        ("..hidden", "hidden"),
        ("", "job"),
        ("???", "job"),
        ("x" * 300, "x" * MAX_ID_STEM),
    ],
)
def test_a_new_id_keeps_what_an_id_may_hold_of_its_stem(stem: str, kept: str) -> None:
    job_id = new_job_id(stem)

    match = FORMAT.fullmatch(job_id)
    assert match is not None and match["stem"] == kept
    assert check_job_id(job_id) == job_id


def test_two_new_ids_of_one_stem_differ() -> None:
    assert len({new_job_id("etl") for _ in range(1000)}) == 1000


def test_the_client_makes_the_same_format_from_a_pipeline_path() -> None:
    job_id = default_job_id("/pipelines/daily sales.py")
    match = FORMAT.fullmatch(job_id)
    assert match is not None and match["stem"] == "daily-sales"
