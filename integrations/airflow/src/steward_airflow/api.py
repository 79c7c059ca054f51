"""Steward's REST API as the provider needs it, over httpx (which Airflow ships).

The provider speaks HTTP itself rather than depending on the ``steward`` distribution, which
would pull PySpark, FastAPI and kazoo into every Airflow worker. It uses a small subset: submit
(``POST /v1/jobs``, after ``HEAD``/``PUT /v1/contents/<sha256>`` for the files the cluster does
not have), read a job, cancel it, read its log's tail, and follow it (:mod:`.events`).

Every request goes to the first JobManager that answers: any JobManager serves reads and a
standby forwards writes to the leader. A refused connection, a 502/503/504 (no leader yet, a
forward cut) or a timeout moves on to the next address, round after round, until the call's
deadline. Resending a submission is safe: the same bytes under the same job id are the same job
(:meth:`StewardApi.submit`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from steward_airflow.job_ids import check_job_id
from steward_airflow.submission import LocalFile, Submission

log = logging.getLogger(__name__)

TERMINAL = frozenset({"FINISHED", "FAILED", "CANCELED"})
_RETRYABLE = frozenset({502, 503, 504})
_RETRY_DELAY = 0.5


class StewardApiError(Exception):
    """A refusal of the cluster (its status, code and sentence), or no JobManager answering."""

    def __init__(self, message: str, *, status: int = 0, code: str = "unreachable") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class JobConflictError(StewardApiError):
    """The job id names a job that was submitted with another spec or pipeline."""


@dataclass(frozen=True)
class Endpoint:
    """Where the cluster is and how to talk to it (a ``steward`` connection)."""

    addresses: tuple[str, ...]
    token: str | None = field(default=None, repr=False)
    verify: bool | str = True
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if not self.addresses:
            raise ValueError("a Steward connection needs at least one JobManager URL")

    def client(self, **timeouts: float) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.AsyncClient(
            headers=headers, verify=self.verify, timeout=httpx.Timeout(30.0, **timeouts)
        )


def addresses_of(hosts: str | Sequence[str], port: int | None = None) -> tuple[str, ...]:
    """JobManager URLs from a comma-separated host field (``http://jm1:8081,http://jm2:8081``;
    a bare host gets ``http://`` and ``port``)."""
    spelled = hosts.split(",") if isinstance(hosts, str) else list(hosts)
    found = []
    for entry in (s.strip().rstrip("/") for s in spelled):
        if "://" in entry:
            found.append(entry)
        elif entry:
            found.append(
                f"http://{entry}:{port}" if port and ":" not in entry else f"http://{entry}"
            )
    return tuple(found)


def job_path(job_id: str) -> str:
    return f"/v1/jobs/{quote(check_job_id(job_id))}"


class StewardApi:
    """The calls the operator, trigger and sensor make; use as an async context manager."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.addresses = list(endpoint.addresses)
        self.http = endpoint.client()

    async def __aenter__(self) -> StewardApi:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.http.aclose()

    async def submit(self, submission: Submission) -> tuple[dict[str, Any], str]:
        """The job of ``submission`` and how it was found: ``submitted`` (new), ``attached``
        (this very submission was made before: a retried task) or ``finished`` (a job of this
        id has a result already). :class:`JobConflictError` when the id names another job."""
        for local in submission.files:
            await self.upload(local)
        response = await self.send("POST", "/v1/jobs", content=submission.body)
        if response.status_code == 201:
            return response.json(), "submitted"
        error = _error_of(response)
        if error.code == "job_exists":
            theirs = response.json().get("submission_sha256")
            if theirs is not None and theirs != submission.sha256:
                raise JobConflictError(
                    f"job {submission.job_id!r} already exists and was submitted with another"
                    " spec or pipeline (the application, its arguments or an option changed"
                    " since the first try); give the task another job_id, or cancel and let"
                    " the result retention remove the old job",
                    status=409,
                    code="job_exists",
                )
            return await self.job(submission.job_id), "attached"
        if error.code == "job_terminated":
            return await self.job(submission.job_id), "finished"
        raise error

    async def upload(self, local: LocalFile) -> bool:
        """Store one named file in the cluster unless it has it; True if it was sent."""
        path = f"/v1/contents/{local.sha256}"
        response = await self.send("HEAD", path)
        if response.status_code == 200:
            log.info("file already stored file=%s sha256=%s", local.path, local.sha256)
            return False
        response = await self.send("PUT", path, content=lambda: _stream(local))
        if not response.is_success:
            raise _error_of(response)
        log.info("file uploaded file=%s bytes=%d", local.path, local.size)
        return True

    async def job(self, job_id: str) -> dict[str, Any]:
        return await self._json("GET", job_path(job_id))

    async def cancel(self, job_id: str) -> dict[str, Any]:
        return await self._json("POST", f"{job_path(job_id)}/cancel")

    async def log_tail(self, job_id: str, attempt: int, lines: int) -> str:
        """The last ``lines`` lines of an attempt's log ('' if the log is gone)."""
        path = f"{job_path(job_id)}/attempts/{attempt}/log"
        response = await self.send("GET", path, params={"tail": str(lines)})
        if not response.is_success:
            log.warning(
                "no log tail job=%s attempt=%d status=%d", job_id, attempt, response.status_code
            )
            return ""
        return response.text

    async def _json(self, method: str, path: str) -> dict[str, Any]:
        response = await self.send(method, path)
        if not response.is_success:
            raise _error_of(response)
        answer: dict[str, Any] = response.json()
        return answer

    async def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The first answer that is not a retryable one, from any JobManager. A callable
        ``content`` is called for each try (a stream cannot be read twice)."""
        make_content = kwargs.pop("content", None)
        deadline = time.monotonic() + self.endpoint.timeout
        last = "no JobManager tried"
        while True:
            for address in list(self.addresses):
                if make_content is not None:
                    kwargs["content"] = make_content() if callable(make_content) else make_content
                try:
                    response = await self.http.request(method, address + path, **kwargs)
                except httpx.TransportError as exc:
                    last = f"{address}: {type(exc).__name__}"
                    continue
                if response.status_code not in _RETRYABLE:
                    self._prefer(address)
                    return response
                last = f"{address}: {response.status_code} {response.text[:200]}"
            if time.monotonic() >= deadline:
                raise StewardApiError(f"no Steward JobManager answered {method} {path} ({last})")
            await asyncio.sleep(_RETRY_DELAY)

    def _prefer(self, address: str) -> None:
        self.addresses.remove(address)
        self.addresses.insert(0, address)


def _error_of(response: httpx.Response) -> StewardApiError:
    try:
        body = response.json()
        code, message = str(body.get("code", "error")), str(body.get("message", ""))
    except (ValueError, AttributeError):
        code, message = "error", response.text[:500]
    return StewardApiError(
        f"Steward answered {response.status_code} {code}: {message}",
        status=response.status_code,
        code=code,
    )


async def _stream(local: LocalFile) -> AsyncIterator[bytes]:
    for chunk in local.chunks():
        yield chunk
