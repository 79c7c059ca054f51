"""``POST /v1/jobs/batch``: many submissions in one request (:mod:`steward.wire.submissions`).

The rules of ``POST /v1/jobs`` item by item: a submitter's or an admin's, every job submitted
as the caller whatever its spec says, each item checked and stored as a single submission is
(:func:`.submission.store_request`) and audited as one; a standby forwards the whole batch to
the leader. The items are stored concurrently on a small pool of threads, so their fenced
creates share the leader's group commits (:mod:`steward.store.group_commit`): a batch costs a
few ZooKeeper transactions, not one per job, and each job is acknowledged only once its graph
is durable and its pointer fenced, as before. A job id that appears twice in one batch is
refused on every item after its first before anything is stored, so the answer never depends
on which thread came first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import JsonValue, ValidationError

from steward.security import audit
from steward.security.identity import Identity
from steward.store.contents import ContentStore
from steward.wire.patterns import MAX_BATCH
from steward.wire.rest import ErrorBody, SubmitRequest
from steward.wire.submissions import (
    BatchItemResult,
    BatchSubmitRequest,
    BatchSubmitResponse,
    ItemOutcome,
)

from .auth import client_address
from .backend import ApiBackend, LeaderTerm
from .errors import ApiError, describe, rate_limited
from .jobs_submit import (
    answered,
    artifact_limit,
    leader_or_forward,
    store_request,
)
from .state import services_of
from .teams import default_team, proxy_grants

router = APIRouter(tags=["jobs"])

WORKERS = 16
"""Items of batches stored at once: enough for a batch's creates to share a group commit."""
_pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="batch-submit")


@router.post(
    "/v1/jobs/batch",
    response_model=BatchSubmitResponse,
    responses={
        400: {"model": ErrorBody},
        403: {"model": ErrorBody},
        413: {"model": ErrorBody, "description": f"more than {MAX_BATCH} submissions"},
        503: {"model": ErrorBody},
        504: {"model": ErrorBody, "description": "outcome_unknown: a standby's forward"},
    },
)
async def submit_batch(request: Request) -> Response:
    """Submit up to 100 jobs, each a ``POST /v1/jobs`` body; one result per job, in order
    (201 created, 200 stored before by these very bytes, else the error that route gives)."""
    # Documented here; answered before FastAPI's routing (.direct).
    return await batch_route(request)


async def batch_route(request: Request) -> Response:
    """``POST /v1/jobs/batch``, answered on the lean path (:mod:`.direct`)."""
    return await answered(request, lambda most: f"a batch is limited to {most} in all", _submit)


def _submit(
    backend: ApiBackend,
    forwarder: httpx.Client,
    contents: ContentStore,
    request: Request,
    *,
    caller: Identity,
    body: bytes,
) -> Response:
    dispatcher = leader_or_forward(backend, forwarder, request, body)
    if isinstance(dispatcher, Response):
        return dispatcher
    items = _parse(body)
    _count_jobs(request, caller, len(items))
    where = client_address(request)
    duplicates = _duplicates(items)
    store = _storer(backend, dispatcher, contents, caller, where)
    results = list(_pool.map(store, items, duplicates))
    answer = BatchSubmitResponse(results=results, served_by=backend.id)
    return Response(answer.model_dump_json(), media_type="application/json")


def _count_jobs(request: Request, caller: Identity, jobs: int) -> None:
    """Every job of a batch counts against its team's rate limit: the middleware counted the
    first before the body was read, these are the others (429 for the whole batch)."""
    limiter = services_of(request).security.limiter
    refusal = limiter.submitting(caller, jobs - 1) if limiter is not None else None
    if refusal is not None:
        raise rate_limited(refusal)


def _parse(body: bytes) -> list[dict[str, JsonValue]]:
    try:
        batch = BatchSubmitRequest.model_validate_json(body)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", describe(exc.errors())) from None
    if len(batch.submissions) > MAX_BATCH:
        raise ApiError(
            413,
            "too_large",
            f"a batch holds at most {MAX_BATCH} submissions, this one has"
            f" {len(batch.submissions)}: split it (nothing was stored)",
        )
    return batch.submissions


def _duplicates(items: list[dict[str, JsonValue]]) -> list[bool]:
    """For each item, whether an earlier item of the batch names the same job id."""
    seen: set[str] = set()
    flags = []
    for item in items:
        job_id = _job_id(item)
        flags.append(job_id is not None and job_id in seen)
        if job_id is not None:
            seen.add(job_id)
    return flags


def _storer(
    backend: ApiBackend,
    dispatcher: LeaderTerm,
    contents: ContentStore,
    caller: Identity,
    where: str | None,
) -> Callable[[dict[str, JsonValue], bool], BatchItemResult]:
    team, grants = default_team(backend), proxy_grants(backend)
    most = artifact_limit(backend)

    def store(item: dict[str, JsonValue], duplicate: bool) -> BatchItemResult:
        job_id = _job_id(item)
        digest = None
        try:
            request = _item(item, job_id, duplicate=duplicate)
            digest = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
            view = store_request(
                dispatcher,
                contents,
                caller,
                request,
                digest,
                default=team,
                grants=grants,
                most=most,
            )
        except ApiError as exc:
            audit.record("job.submit", caller, client=where, outcome=str(exc.status))
            return _known(dispatcher, job_id, digest, exc) or _refused(job_id, exc)
        audit.record("job.submit", caller, client=where, job_id=view.job_id)
        backend.reader.note(view)  # listed at once, before its watch fires
        return BatchItemResult(
            job_id=view.job_id, outcome=ItemOutcome.CREATED, status=201, job=view
        )

    return store


def _item(item: dict[str, JsonValue], job_id: str | None, *, duplicate: bool) -> SubmitRequest:
    """The item as a submission, or the 400 that refuses it alone."""
    if duplicate:
        message = f"job id {job_id!r} appears more than once in the batch"
        raise ApiError(400, "duplicate_job_id", message)
    try:
        return SubmitRequest.model_validate(item)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", describe(exc.errors())) from None


def _known(
    dispatcher: LeaderTerm, job_id: str | None, digest: str | None, exc: ApiError
) -> BatchItemResult | None:
    """The job stored by an earlier try of this very item, if that is what the refusal says."""
    if job_id is None or digest is None or exc.body.code != "job_exists":
        return None
    if exc.body.submission_sha256 != digest:
        return None
    view = dispatcher.view(job_id, with_checkpoints=False)
    if view is None:
        return None
    return BatchItemResult(job_id=job_id, outcome=ItemOutcome.EXISTS, status=200, job=view)


def _refused(job_id: str | None, exc: ApiError) -> BatchItemResult:
    return BatchItemResult(
        job_id=job_id, outcome=ItemOutcome.REFUSED, status=exc.status, error=exc.body
    )


def _job_id(item: dict[str, JsonValue]) -> str | None:
    spec = item.get("spec")
    job_id = spec.get("job_id") if isinstance(spec, dict) else None
    return job_id if isinstance(job_id, str) and job_id else None
