"""Client.submit_many's handling of a batch's answers, against a scripted JobManager
(httpx.MockTransport): the real endpoint is tested in
tests/integration/jobmanager/test_batch_submission.py. An item the leader could not store yet
(503) is sent again, alone and with the same bytes, until it is answered; an item refused for
good is returned as the error ``submit`` would raise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.client import Client
from steward.client import batches as batches_module
from steward.errors import JobExistsError, JobRejectedError
from steward.wire.rest import JobView

ADDRESS = "http://jm-a:8081"


def _created(job_id: str) -> dict[str, Any]:
    view = {"job_id": job_id, "state": "SCHEDULED"}
    return {"job_id": job_id, "outcome": "created", "status": 201, "job": view}


def _refused(job_id: str, status: int, code: str) -> dict[str, Any]:
    error = {"code": code, "message": f"{code} for {job_id}"}
    return {"job_id": job_id, "outcome": "refused", "status": status, "error": error}


def test_items_not_stored_yet_are_sent_again_until_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = tmp_path / "stw_batch.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    slept: list[float] = []
    monkeypatch.setattr(batches_module, "_sleep", slept.append)
    sent: list[list[dict[str, Any]]] = []

    def leader(request: httpx.Request) -> httpx.Response:
        items = json.loads(request.content)["submissions"]
        sent.append(items)
        ids = [item["spec"]["job_id"] for item in items]
        if len(sent) == 1:
            results = [
                _created(ids[0]),
                _refused(ids[1], 503, "unavailable"),
                _refused(ids[2], 409, "job_exists"),
                _refused(ids[3], 400, "bad_request"),
            ]
        else:
            results = [_created(job_id) for job_id in ids]
        return httpx.Response(200, json={"results": results, "served_by": "jm-a"})

    jobs = [{"job_id": f"job-{n}"} for n in range(4)]
    with Client([ADDRESS], timeout=5.0, transport=httpx.MockTransport(leader)) as client:
        outcomes = client.submit_many(pipeline, jobs)
    assert isinstance(outcomes[0], JobView) and outcomes[0].job_id == "job-0"
    assert isinstance(outcomes[1], JobView) and outcomes[1].job_id == "job-1"
    assert isinstance(outcomes[2], JobExistsError)
    assert isinstance(outcomes[3], JobRejectedError)
    assert len(sent) == 2 and sent[1] == [sent[0][1]]  # the same bytes, that item alone
    assert slept == [batches_module.RETRY_FIRST]


def test_an_item_still_refused_at_the_deadline_is_returned_as_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = tmp_path / "stw_batch.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    clock = [0.0]
    monkeypatch.setattr(batches_module, "_now", lambda: clock[0])
    monkeypatch.setattr(batches_module, "_sleep", lambda s: clock.__setitem__(0, clock[0] + s))

    def leader(request: httpx.Request) -> httpx.Response:
        ids = [i["spec"]["job_id"] for i in json.loads(request.content)["submissions"]]
        results = [_refused(job_id, 503, "not_ready") for job_id in ids]
        return httpx.Response(200, json={"results": results, "served_by": "jm-a"})

    with Client([ADDRESS], timeout=3.0, transport=httpx.MockTransport(leader)) as client:
        outcomes = client.submit_many(pipeline, [{"job_id": "job-late"}])
    assert len(outcomes) == 1 and not isinstance(outcomes[0], JobView)
    assert "not_ready for job-late" in str(outcomes[0])
    assert 1.0 < clock[0] <= 3.0
