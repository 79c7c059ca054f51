"""A fake JobManager REST API behind ``httpx.MockTransport``, for tests of client-side logic.

It keeps just enough state to answer like the real API (ErrorBody codes, 201/202/404/409), and
lets a test refuse connections to an address, script one-shot answers, or give every submitted
job a sequence of states. The real API is exercised end to end in tests/e2e/cluster.

Import as ``from unit.fake_jobmanager import FakeJobManagers`` (tests/ is on sys.path).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import httpx

Handler = Callable[[httpx.Request], httpx.Response]


def job_json(job_id: str, state: str = "RUNNING", **extra: Any) -> dict[str, Any]:
    return {"job_id": job_id, "state": state, **extra}


def result_json(job_id: str, state: str = "FINISHED", **extra: Any) -> dict[str, Any]:
    return {"job_id": job_id, "state": state, "finished_at": 2.0, "cleanup": "CLEAN", **extra}


def attempt_json(number: int, state: str = "RUNNING", **extra: Any) -> dict[str, Any]:
    return {"number": number, "taskmanager": "tm-1", "epoch": 1, "state": state, **extra}


def error(status: int, code: str, message: str, **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": message, **extra})


class FakeJobManagers:
    """Every address answers from the same state, except those in ``down``."""

    def __init__(self) -> None:
        self.views: dict[str, list[dict[str, Any]]] = {}  # successive GET answers per job
        self.results: dict[str, dict[str, Any]] = {}
        self.down: set[str] = set()
        self.requests: list[httpx.Request] = []
        self.script: list[Handler] = []  # one-shot answers, tried before the routes
        self.run: list[dict[str, Any]] = []  # what a submitted job goes through after 201
        self.leader: dict[str, Any] | None = {"id": "jm-1", "address": "http://a", "epoch": 1}
        self.digests: dict[str, str] = {}  # the sha256 of the body that created each job
        self.say_digest = True  # False: answer job_exists as a JobManager before digests did
        # The CLI's client gives up after this many seconds of wall time (the retries' sleeps
        # are patched out, so an unreachable cluster spins for all of it): short for the
        # give-up tests, longer where a retry must land on a loaded machine.
        self.client_timeout = 0.5

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def add_job(self, job_id: str, *views: dict[str, Any]) -> None:
        self.views[job_id] = list(views) or [job_json(job_id)]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        origin = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        if origin in self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if self.script:
            return self.script.pop(0)(request)
        return self.route(request)

    def route(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.rstrip("/")
        parts = path.split("/")[1:]  # v1 jobs <id> <action>
        if path == "/v1/cluster":
            return httpx.Response(200, json=self._cluster())
        if path == "/v1/jobs" and request.method == "POST":
            return self._submit(json.loads(request.content)["spec"], request.content)
        if path == "/v1/jobs":
            return self._list(request)
        if len(parts) < 3 or parts[:2] != ["v1", "jobs"]:
            return error(404, "not_found", f"no route {path}")
        job_id, action = parts[2], parts[3] if len(parts) > 3 else ""
        if job_id not in self.views:
            return error(404, "job_not_found", f"no job {job_id!r} in this cluster")
        if action == "result":
            if job_id not in self.results:
                return error(409, "job_not_terminated", f"job {job_id!r} has not terminated")
            return httpx.Response(200, json=self.results[job_id])
        if action == "cancel":
            return httpx.Response(202, json=job_json(job_id, "CANCELLING"))
        views = self.views[job_id]
        return httpx.Response(200, json=views.pop(0) if len(views) > 1 else views[0])

    def _list(self, request: httpx.Request) -> httpx.Response:
        """Newest (last added) first, ``limit`` a page; a cursor is an offset here."""
        newest = [views[0] for views in self.views.values()][::-1]
        start = int(request.url.params.get("cursor", "0"))
        end = start + int(request.url.params.get("limit", "100"))
        more = str(end) if end < len(newest) else None
        return httpx.Response(200, json={"jobs": newest[start:end], "next": more})

    def posts(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.method == "POST"]

    def _submit(self, spec: dict[str, Any], body: bytes) -> httpx.Response:
        job_id = spec["job_id"]
        if job_id in self.views:
            digest = self.digests.get(job_id) if self.say_digest else None
            extra = {"submission_sha256": digest} if digest else {}
            return error(409, "job_exists", f"job {job_id!r} is already running", **extra)
        self.digests[job_id] = hashlib.sha256(body).hexdigest()
        submitted = job_json(job_id, "SUBMITTED")
        self.views[job_id] = [submitted] + [_with_id(view, job_id) for view in self.run]
        final = self.views[job_id][-1]
        if final.get("result"):
            self.results[job_id] = {**final["result"], "job_id": job_id}
        return httpx.Response(201, json=submitted)

    def _cluster(self) -> dict[str, Any]:
        return {
            "cluster_id": "fake",
            "leader": self.leader,
            "jobmanagers": [],
            "taskmanagers": [],
        }


def _with_id(view: dict[str, Any], job_id: str) -> dict[str, Any]:
    if view.get("result"):
        view = {**view, "result": {**view["result"], "job_id": job_id}}
    return {**view, "job_id": job_id}
