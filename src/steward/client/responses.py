"""The JobManagers' answers, as the client reads them: bodies decoded into the API's models,
error bodies into Steward's exception tree (with the server's message), and the checks a job id
and a spec pass before they reach a request."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from steward.client.errors import JobTerminatedError, MissingContentsError
from steward.client.failover import retry_after_seconds
from steward.errors import (
    ApiError,
    JobExistsError,
    JobNotFoundError,
    JobRejectedError,
    NoLeaderError,
    StewardError,
)
from steward.wire.jobs import JobSpec
from steward.wire.rest import ErrorBody, JobView
from steward.wire.values import check_job_id

_REJECTIONS = frozenset({"bad_request", "too_large", "missing_contents", "content_mismatch"})

V = TypeVar("V", bound=BaseModel)


def checked_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` validated as a JobSpec, as JSON, with only the fields the caller set."""
    try:
        model = JobSpec.model_validate(spec)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "spec"
        raise JobRejectedError(f"invalid job spec: {where}: {first['msg']}") from exc
    return model.model_dump(mode="json", exclude_unset=True)


def first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'body'}: {first['msg']}"
    return str(exc)


def latest_attempt(view: JobView) -> int:
    if not view.attempts:
        raise StewardError(f"job {view.job_id} has no attempt yet (it is {view.state.value})")
    return max(record.number for record in view.attempts)


def job_path(job_id: str) -> str:
    try:
        return f"/v1/jobs/{check_job_id(job_id)}"
    except ValueError as exc:
        # No job can have this id, and it must not reach a URL path ("../x") unchecked.
        not_found = JobNotFoundError(job_id)
        not_found.args = (f"no job {job_id!r}: {exc}",)
        raise not_found from exc


def decode(model: type[V], response: httpx.Response) -> V:
    try:
        return model.model_validate_json(response.content)
    except ValidationError as exc:
        raise ApiError(
            f"unexpected answer from {response.request.url}: {exc.errors()[0]['msg']}",
            status=response.status_code,
            code="bad_response",
        ) from exc


def api_error(response: httpx.Response, error: ErrorBody, job_id: str | None) -> StewardError:
    status = response.status_code
    exc: JobNotFoundError | JobExistsError
    if error.code == "job_not_found" and job_id is not None:
        exc = JobNotFoundError(job_id)
    elif error.code == "job_exists" and job_id is not None:
        exc = JobExistsError(job_id)
    elif error.code == "job_terminated":
        return JobTerminatedError(error.message, result=error.result, status=status)
    elif error.code == "no_leader":
        return NoLeaderError(error.message, retry_after=retry_after_seconds(response) or None)
    elif error.code == "unauthorized":
        return ApiError(
            f"{error.message}; give one with --token, $STEWARD_TOKEN or client.token-file"
            " (`steward cluster start` writes an admin token to .steward/admin.token)",
            status=status,
            code=error.code,
        )
    elif error.code == "missing_contents" and response.request.method == "POST":
        return MissingContentsError(error.message)
    elif error.code in _REJECTIONS and response.request.method in ("POST", "PUT"):
        return JobRejectedError(error.message)
    else:
        return ApiError(error.message, status=status, code=error.code)
    # The store's classes word their own message from the id; the server's sentence says more.
    exc.args = (error.message,)
    return exc
