"""A submission made safe to repeat: one body, its sha256, and what a ``job_exists`` means.

``POST /v1/jobs`` is the one request whose lost answer matters: the leader may have stored the
job and died before answering, or a standby's forward may have been cut after it was sent (the
standby says ``outcome_unknown``). The client therefore always sends a job id of its own and
retries with the same body bytes. The leader keeps the sha256 of the body that created a job
and a ``job_exists`` answer carries it: equal to ours, the job is this very submission (an
earlier try got through, or the same submission was made twice) and the submit succeeded;
different, the id belongs to another job and the submit fails with :class:`JobExistsError`.
A server that does not say (an older one, or the job still being stored) is believed only when
an earlier try may have reached a JobManager, as before.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from steward.client.failover import Failover, error_body
from steward.client.responses import api_error, decode
from steward.errors import ClusterUnreachableError, JobExistsError, NoLeaderError
from steward.wire.rest import ArtifactUpload, ErrorBody, JobView, SubmitRequest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submission:
    """The body of one submission, serialised once so that every try sends the same bytes."""

    job_id: str
    body: bytes
    sha256: str


def prepare(spec: Mapping[str, Any], filename: str, artifact_b64: str) -> Submission:
    """The submission of ``spec`` (which names its job id) with the artifact in base64."""
    request = SubmitRequest(
        spec=dict(spec), artifact=ArtifactUpload(filename=filename, data_b64=artifact_b64)
    )
    body = request.model_dump_json().encode()
    return Submission(str(spec["job_id"]), body, hashlib.sha256(body).hexdigest())


def send(failover: Failover, prepared: Submission, lookup: Callable[[str], JobView]) -> JobView:
    """``POST /v1/jobs`` with ``prepared`` until a JobManager answers; the job's view, also when
    the job exists because an earlier try of this very submission got through (``lookup``)."""
    job_id = prepared.job_id
    try:
        response, maybe_accepted = failover.send("POST", "/v1/jobs", prepared.body)
    except (NoLeaderError, ClusterUnreachableError) as exc:
        exc.args = (
            f"{exc}; job {job_id} may have been submitted: see `steward status"
            f" {job_id}`, or submit again with --job-id {job_id}",
        )
        raise
    if response.status_code == httpx.codes.CREATED:
        return decode(JobView, response)
    error = error_body(response)
    if is_ours(prepared, error, maybe_accepted=maybe_accepted):
        log.info("submission was accepted by an earlier attempt job=%s", job_id)
        return lookup(job_id)
    raise api_error(response, error, job_id)


def is_ours(submission: Submission, error: ErrorBody, *, maybe_accepted: bool) -> bool:
    """Whether a refusal says the job exists because of this very submission."""
    if error.code == "job_exists" and error.submission_sha256 is not None:
        if error.submission_sha256 == submission.sha256:
            return True
        raise _someone_elses(submission.job_id)
    # No digest to compare (a result's 409, an older server): only our own earlier try,
    # which may have got through, can explain it.
    return maybe_accepted and error.code in ("job_exists", "job_terminated")


def _someone_elses(job_id: str) -> JobExistsError:
    exc = JobExistsError(job_id)
    exc.args = (
        f"job {job_id!r} already exists and was submitted with another spec or pipeline;"
        " choose another job id",
    )
    return exc
