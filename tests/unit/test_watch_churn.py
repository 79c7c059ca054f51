"""A standby does not read a result that a submission's check created and deleted in one
transaction (``store/watches.py``, :func:`without_churn`): pure logic over a worker's batch."""

from __future__ import annotations

from steward.store.watches import _Watch, without_churn


def _watch(kind: str, job_id: str) -> _Watch:
    return _Watch(kind, job_id, f"/{kind}/{job_id}", lambda *_: True)


def test_a_result_created_and_deleted_in_one_batch_is_not_read() -> None:
    result, status = _watch("result", "job-1"), _watch("status", "job-1")
    batch = [(status, False), (result, False), (result, True)]
    assert without_churn(batch) == [(status, False)]


def test_a_result_created_after_its_deletion_is_read_and_other_jobs_are_untouched() -> None:
    first, other = _watch("result", "job-1"), _watch("result", "job-2")
    batch = [(first, False), (other, False), (first, True), (first, False)]
    assert without_churn(batch) == [(other, False), (first, False)]


def test_a_status_record_deleted_is_still_delivered() -> None:
    status = _watch("status", "job-1")
    batch = [(status, False), (status, True)]
    assert without_churn(batch) == batch
