"""The lean path's middleware (:mod:`steward.jobmanager.rest.direct`): what it answers
itself, how its errors read, and that it passes every other request on untouched."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from steward.errors import JobExistsError
from steward.jobmanager.rest.direct import DirectRoutes
from steward.jobmanager.rest.errors import ApiError, add_error_handlers


async def _created(request: Request) -> Response:
    return JSONResponse({"body": (await request.body()).decode()}, status_code=201)


async def _refused(_request: Request) -> Response:
    raise ApiError(429, "rate_limited", "slow down", headers={"Retry-After": "7"})


async def _exists(_request: Request) -> Response:
    raise JobExistsError("job-1", "running submission", submission_sha256="ab" * 32)


def _app() -> TestClient:
    app = FastAPI()
    add_error_handlers(app)

    @app.post("/direct")
    async def shadowed() -> dict[str, str]:
        return {"answered_by": "fastapi"}

    @app.post("/other")
    async def other() -> dict[str, str]:
        return {"answered_by": "fastapi"}

    routes = {("POST", "/direct"): _created, ("POST", "/refused"): _refused}
    app.add_middleware(DirectRoutes, routes={**routes, ("POST", "/exists"): _exists})
    return TestClient(app)


def test_a_direct_route_is_answered_by_its_handler_the_rest_by_fastapi() -> None:
    api = _app()
    direct = api.post("/direct", content=b"hello")
    assert (direct.status_code, direct.json()) == (201, {"body": "hello"})
    assert api.post("/other").json() == {"answered_by": "fastapi"}
    assert api.get("/direct").status_code == 405  # another method: FastAPI's answer


def test_a_direct_routes_errors_are_the_apis_error_bodies() -> None:
    api = _app()
    refused = api.post("/refused")
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "7")
    assert refused.json() == {"code": "rate_limited", "message": "slow down"}
    exists = api.post("/exists")
    assert (exists.status_code, exists.json()["code"]) == (409, "job_exists")
    assert exists.json()["submission_sha256"] == "ab" * 32
