"""Every error answer of the TaskManager's port is an :class:`ErrorBody`, as the API's are:
a route's :class:`~.files.LogUnavailableError`, a request that does not parse (400, named as
FastAPI named it on the JobManagers' routes: ``query.folow: Extra inputs are not permitted``),
an unknown path (404) or method (405)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ExceptionHandler

from steward.wire.rest import ErrorBody

from .files import LogUnavailableError

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


def error_answer(status: int, code: str, message: str) -> JSONResponse:
    body = ErrorBody(code=code, message=message)
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=status)


def bad_request(where: tuple[str, ...], exc: ValidationError) -> LogUnavailableError:
    """A 400 naming the first thing wrong in the part ``where`` of the request (``("query",)``,
    ``("path", "attempt")``)."""
    first = exc.errors()[0] if exc.errors() else None
    loc = where + tuple(str(part) for part in first["loc"]) if first else where
    message = first["msg"] if first else "invalid"
    return LogUnavailableError(400, "bad_request", f"{'.'.join(loc) or 'request'}: {message}")


async def _answer(_request: Request, exc: Exception) -> Response:
    if isinstance(exc, LogUnavailableError):
        return error_answer(exc.status, exc.code, exc.message)
    if isinstance(exc, HTTPException):
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return error_answer(exc.status_code, code, str(exc.detail))
    raise exc


EXCEPTION_HANDLERS: Mapping[type[Exception], ExceptionHandler] = {
    LogUnavailableError: _answer,
    HTTPException: _answer,
}
"""The app's handlers: Starlette's own would answer 404 and 405 in plain text."""
