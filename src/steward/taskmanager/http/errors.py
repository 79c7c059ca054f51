"""Every error answer of the TaskManager's port is an :class:`ErrorBody`, as the API's are."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from steward.wire.rest import ErrorBody

from .files import LogUnavailableError

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


def _answer(status: int, code: str, message: str) -> JSONResponse:
    body = ErrorBody(code=code, message=message)
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=status)


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(LogUnavailableError)
    async def unavailable(_request: Request, exc: LogUnavailableError) -> JSONResponse:
        return _answer(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())) or "request"
        return _answer(400, "bad_request", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return _answer(exc.status_code, code, str(exc.detail))
