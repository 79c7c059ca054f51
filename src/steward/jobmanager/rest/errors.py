"""Every error answer is an :class:`~steward.wire.rest.ErrorBody` ``{code, message}``.

:class:`ApiError` is what a route raises; :func:`add_error_handlers` answers it, FastAPI's
routing errors (404, 405) and validation errors (400) alike; :func:`raise_for` maps a
:class:`~steward.errors.StewardError` from the JobManager to its HTTP status and code.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from steward.errors import (
    BlobStoreError,
    FencedError,
    JobExistsError,
    JobNotFoundError,
    JobRejectedError,
    NotReadyError,
    ResultBodyError,
    StewardError,
)
from steward.jobmanager.errors import JobResultExistsError
from steward.security.rate_limits import Refusal
from steward.wire.rest import ErrorBody, ResultView

log = logging.getLogger(__name__)

RETRY_AFTER = "1"
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(code=code, message=message, **extra)
        self.headers = headers or {}


def rate_limited(refusal: Refusal) -> ApiError:
    """A rate limit's refusal (steward.security.rate_limits): 429 with Retry-After."""
    return ApiError(429, "rate_limited", refusal.message, headers=refusal.headers())


def no_leader(message: str = "no JobManager leads right now; retry shortly") -> ApiError:
    return ApiError(503, "no_leader", message, headers={"Retry-After": RETRY_AFTER})


def outcome_unknown(leader: str, cause: Exception) -> ApiError:
    """A forwarded write that reached the leader (or may have) and got no answer: it may have
    been carried out. Retryable, like ``no_leader``; unlike it, never "nothing was done"."""
    message = (
        f"the request was sent to the leader {leader}, which did not answer ({cause!r}):"
        " it may or may not have been carried out; retry it with the same job id"
    )
    return ApiError(504, "outcome_unknown", message, headers={"Retry-After": RETRY_AFTER})


def error_response(exc: ApiError) -> JSONResponse:
    """The answer to a route's ApiError: its status, headers and ErrorBody."""
    return JSONResponse(
        exc.body.model_dump(mode="json", exclude_none=True),
        status_code=exc.status,
        headers=exc.headers,
    )


def add_error_handlers(app: FastAPI) -> None:
    """Every error answer is an ErrorBody ``{code, message}``, whatever raised it."""

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing errors (no such path, e.g. a job id with a "/" in it; wrong method) would
        # otherwise be FastAPI's {"detail": ...}, not the ErrorBody every client expects.
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = f"{exc.detail}: {request.method} {request.url.path[:200]}"
        body = ErrorBody(code=code, message=message)
        return JSONResponse(
            body.model_dump(mode="json", exclude_none=True),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(StewardError)
    async def refused(_request: Request, exc: StewardError) -> JSONResponse:
        # A route that let one through (a read whose ZooKeeper session expired under it, as
        # the network chaos found): its status and code, never a 500 and a traceback.
        try:
            raise_for(exc)
        except ApiError as answer:
            return await api_error(_request, answer)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        body = ErrorBody(code="bad_request", message=describe(exc.errors()))
        return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=400)


def raise_for(exc: StewardError) -> NoReturn:
    """The answer to a JobManager's refusal: its status and code, raised as an ApiError."""
    if isinstance(exc, JobResultExistsError):
        raise ApiError(
            409,
            "job_terminated",
            str(exc),
            result=ResultView.of(exc.result),
            submission_sha256=exc.result.submission_sha256,
        ) from None
    if isinstance(exc, JobExistsError):
        raise ApiError(
            409, "job_exists", str(exc), submission_sha256=exc.submission_sha256
        ) from None
    if isinstance(exc, JobNotFoundError):
        raise ApiError(404, "job_not_found", str(exc)) from None
    if isinstance(exc, JobRejectedError):
        raise ApiError(400, "bad_request", str(exc)) from None
    if isinstance(exc, BlobStoreError):
        # Full, read-only or unreachable storage: not answered 503, which clients retry for
        # their whole timeout and then report as "no JobManager answered"; the user needs
        # the storage's own error now. Nothing was written (see JobGraphStore.put).
        log.warning("blob storage refused a write error=%s", exc)
        raise ApiError(507, "storage_unavailable", str(exc)) from None
    if isinstance(exc, ResultBodyError):
        # Not 503: no retry brings a lost body back, and the client would retry for its
        # whole timeout before saying anything.
        log.error("job result unreadable error=%s", exc)
        raise ApiError(500, "result_unreadable", str(exc)) from None
    if isinstance(exc, NotReadyError | FencedError):
        raise ApiError(503, "not_ready", str(exc), headers={"Retry-After": RETRY_AFTER}) from None
    log.warning("request failed error=%r", exc)
    raise ApiError(503, "unavailable", str(exc), headers={"Retry-After": RETRY_AFTER}) from None


def describe(errors: Any) -> str:
    """Validation errors (pydantic's) in one line: the first five, where and what."""
    parts = []
    for error in list(errors)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
