"""A submission's body into a stored job: size limit, parsing, checks, then the leader's submit.

``POST /v1/jobs`` carries a spec and the pipeline (a .py file or a zipped folder) in base64.
The body is read within :func:`submission_bytes` of ``jobmanager.artifact.max-size``; on a
standby it is forwarded to the leader as it came; on the leader the spec is completed (a job
id, spark-submit's options), validated, the artifact checked, and the job stored with every
file it names pinned. The job records its submitter (the caller's name, whatever the spec
says) and its team (one the caller is in: :mod:`steward.security.teams`; 403 and nothing
stored otherwise); each outcome is audited. A job id another team's job took is refused
without that job's result. This is the route's side of a submission (beside :mod:`.jobs`);
the leader's side, which stores the job, is :mod:`steward.jobmanager.leader.submissions`.
"""

from __future__ import annotations

import array
import base64
import binascii
import contextlib
import hashlib
import itertools
import re
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from fastapi import Request
from fastapi.responses import Response
from pydantic import ValidationError

from steward.artifacts.checked import CheckedArtifacts
from steward.errors import JobExistsError, JobRejectedError, StewardError
from steward.jobmanager.errors import JobResultExistsError
from steward.security import audit
from steward.security.identity import Identity
from steward.security.roles import Action
from steward.security.teams import TeamRefusedError, scope_of, submission_team
from steward.store.contents import ContentStore
from steward.wire import redaction, spark_options
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.patterns import TEAM_PATTERN
from steward.wire.rest import JobView, SubmitRequest
from steward.wire.values import new_job_id

from .. import faults
from .archive_checks import check_archives
from .auth import client_address, identity_of, require
from .backend import ApiBackend, LeaderTerm
from .bodies import bounded_body
from .contents import missing_contents
from .errors import ApiError, describe, raise_for
from .forwarding import forward, leading
from .state import services_of
from .submission_threads import on_submission_thread
from .teams import check_proxy, default_team, proxy_grants

MAX_JSON_DEPTH = 32
"""A submission nests objects and arrays at most this deep (a spec needs 4)."""
CHECKED = CheckedArtifacts()
"""This JobManager's pipelines already checked: the same file submitted again is not
compiled and parsed again (:mod:`steward.artifacts.checked`)."""
_TEAM = re.compile(TEAM_PATTERN)
MAX_JSON_CONTAINERS = 50_000
"""A submission holds at most this many objects and arrays (a spec with 1000 dependencies
needs about 1000)."""


async def submission_route(request: Request) -> Response:
    """``POST /v1/jobs``, answered on the lean path (:mod:`.direct`); the FastAPI route of the
    same path delegates here."""
    return await answered(request, lambda most: f"submissions are limited to {most}", submit)


class Submitter(Protocol):
    """What stores one route's submissions (:func:`submit`, a batch's)."""

    def __call__(
        self,
        backend: ApiBackend,
        forwarder: httpx.Client,
        contents: ContentStore,
        request: Request,
        *,
        caller: Identity,
        body: bytes,
    ) -> Response: ...


Limit = Callable[[str], str]
"""The 413's message of a route, given the artifact limit in words (``64 bytes of artifact``)."""


def artifact_limit(backend: ApiBackend) -> int:
    """The most bytes of artifact one submission carries: ``jobmanager.artifact.max-size``."""
    return backend.config.settings.jobmanager.artifact_max_size


def submission_bytes(artifact_bytes: int) -> int:
    """A submission's body: ``artifact_bytes`` in base64 plus room for the spec."""
    return artifact_bytes * 4 // 3 + 64 * 1024


async def answered(request: Request, limit: Limit, submitter: Submitter) -> Response:
    """A submission route's answer: the caller's body read (``limit``'s message past the
    submission limit), then ``submitter`` on a worker thread (it waits for ZooKeeper)."""
    caller = identity_of(request)
    services = services_of(request)
    body = await submission_body(request, caller, limit)
    answer: Response = await on_submission_thread(
        lambda: submitter(
            services.backend,
            services.forwarder,
            services.contents,
            request,
            caller=caller,
            body=body,
        )
    )
    return answer


async def submission_body(request: Request, caller: Identity, limit: Limit) -> bytes:
    """The body of a submission route (one job or a batch), read up to the submission limit
    (413 with ``limit``'s message past it), once the caller is known to be allowed to submit."""
    if not caller.may(Action.SUBMIT):
        audit.record("job.submit", caller, client=client_address(request), outcome="denied")
        require(caller, Action.SUBMIT)
    most = artifact_limit(services_of(request).backend)
    return await bounded_body(request, submission_bytes(most), limit(f"{most} bytes of artifact"))


def submit(
    backend: ApiBackend,
    forwarder: httpx.Client,
    contents: ContentStore,
    request: Request,
    *,
    caller: Identity,
    body: bytes,
) -> Response:
    """Store the job a submission's body describes (201), or forward it to the leader."""
    dispatcher = leader_or_forward(backend, forwarder, request, body)
    if isinstance(dispatcher, Response):
        return _noted(backend, dispatcher)
    where = client_address(request)
    try:
        team, grants = default_team(backend), proxy_grants(backend)
        most = artifact_limit(backend)
        view = _store(dispatcher, contents, caller, body, team, grants=grants, most=most)
    except ApiError as exc:
        audit.record("job.submit", caller, client=where, outcome=str(exc.status))
        raise
    faults.reach(faults.SUBMIT_STORED, view.job_id)
    audit.record("job.submit", caller, client=where, job_id=view.job_id)
    backend.reader.note(view)  # listed at once, before its watch fires
    # Serialised by pydantic in one pass (a dict then json.dumps cost 4 times as much).
    return Response(view.model_dump_json(), status_code=201, media_type="application/json")


def leader_or_forward(
    backend: ApiBackend, forwarder: httpx.Client, request: Request, body: bytes
) -> LeaderTerm | Response:
    """The leader's term that stores a submission (single or batch), once its body's JSON
    shape has passed; on a standby, the leader's answer to the forwarded request instead."""
    check_json_shape(body)
    dispatcher = leading(backend)
    if dispatcher is None:
        return forward(backend, forwarder, request, body)
    return dispatcher


def _noted(backend: ApiBackend, answer: Response) -> Response:
    """The leader's answer to a forwarded submission; the job it accepted is listed here at
    once too (a client that submits through this standby, then lists, sees its job)."""
    if answer.status_code == 201:
        with contextlib.suppress(ValidationError):
            backend.reader.note(JobView.model_validate_json(bytes(answer.body)))
    return answer


def _store(
    dispatcher: LeaderTerm,
    contents: ContentStore,
    caller: Identity,
    body: bytes,
    team: str,
    *,
    grants: tuple[tuple[str, str], ...],
    most: int,
) -> JobView:
    """The job stored by the leader's term, as the submitter ``caller``; or an ApiError."""
    digest = hashlib.sha256(body).hexdigest()  # a retry of these bytes is this submission
    try:
        request = SubmitRequest.model_validate_json(body)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", describe(exc.errors())) from None
    return store_request(
        dispatcher, contents, caller, request, digest, default=team, grants=grants, most=most
    )


def store_request(
    dispatcher: LeaderTerm,
    contents: ContentStore,
    caller: Identity,
    request: SubmitRequest,
    digest: str,
    *,
    default: str,
    grants: tuple[tuple[str, str], ...] = (),
    most: int,
) -> JobView:
    """The job a parsed submission describes, stored as the submitter ``caller``; ``digest``
    names the submission for its retries; ``grants``: security.proxy-users; ``most``: the
    artifact's limit in bytes. An ApiError if refused."""
    spec_fields = dict(request.spec)
    spec_fields["submitter"] = caller.name
    spec_fields["team"] = _team(caller, spec_fields.get("team"), default)
    if not spec_fields.get("job_id"):
        spec_fields["job_id"] = new_job_id(request.artifact.filename.rsplit(".", 1)[0])
    if request.options:
        _apply_spark_options(spec_fields, request.options)
    try:
        spec = JobSpec.model_validate(spec_fields)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", "bad spec: " + describe(exc.errors())) from None
    check_proxy(caller, spec.proxy_user, grants)
    try:
        data = base64.b64decode(request.artifact.data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "bad_request", "artifact.data_b64 is not valid base64") from None
    if len(data) > most:
        raise ApiError(413, "too_large", f"artifacts are limited to {most} bytes")
    try:
        redaction.check_conf(spec.spark_conf)
        artifact, spec = CHECKED.check(request.artifact.filename, data, spec)
        graph = JobGraph(
            spec=spec, artifact=artifact, submitted_at=time.time(), submission_sha256=digest
        )
        # Pinned: the leader's content GC cannot remove a file between this check and the
        # job graph that names it being stored.
        with dispatcher.content_gc.pinned(d.sha256 for d in spec.dependencies):
            missing = missing_contents(contents, spec.dependencies)
            if missing is not None:
                raise ApiError(400, "missing_contents", missing)
            check_archives(contents, spec.dependencies)
            return dispatcher.submit(spec, graph)
    except StewardError as exc:
        raise_for(hidden_if_foreign(exc, dispatcher, caller, default))


def _team(caller: Identity, named: object, default: str) -> object:
    """The team the job is stored as (403 if ``caller`` may not submit as the one it names);
    a ``team`` that could name none is left for the spec's validation to refuse (400)."""
    if named is not None and not (isinstance(named, str) and _TEAM.fullmatch(named)):
        return named
    try:
        return submission_team(caller, named, default)
    except TeamRefusedError as exc:
        raise ApiError(403, "forbidden", str(exc)) from None


def hidden_if_foreign(
    exc: StewardError, dispatcher: LeaderTerm, caller: Identity, default: str
) -> StewardError:
    """``exc``, or, when it says that a job of a team ``caller`` does not see exists (its id
    was taken), the same refusal without that job's result or submission digest."""
    scope = scope_of(caller, default)
    if scope is None:
        return exc
    if isinstance(exc, JobResultExistsError) and not scope.sees(exc.result.team):
        return JobExistsError(exc.result.job_id)
    if isinstance(exc, JobExistsError) and exc.submission_sha256 is not None:
        view = dispatcher.view(exc.job_id, with_checkpoints=False)
        if view is None or not scope.sees(view.team):
            return JobExistsError(exc.job_id)
    return exc


def check_json_shape(body: bytes) -> None:
    """Refuse (400) a body with more than :data:`MAX_JSON_CONTAINERS` objects and arrays, or
    nested deeper than :data:`MAX_JSON_DEPTH`, before any parser recurses into it.

    Brackets inside strings do not count (the artifact's base64 is one string); the scan is
    bounded by the size limit and runs at C speed but for the depth count, which only runs on
    a body that has passed the count limit.
    """
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    if len(brackets) > 2 * MAX_JSON_CONTAINERS:
        raise ApiError(
            400,
            "bad_request",
            f"the request body has more than {MAX_JSON_CONTAINERS} JSON objects and arrays",
        )
    steps = array.array("b", brackets.translate(_STEPS))
    if max(itertools.accumulate(steps), default=0) > MAX_JSON_DEPTH:
        raise ApiError(
            400, "bad_request", f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels"
        )


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1 as signed bytes


def _apply_spark_options(spec_fields: dict[str, Any], options: dict[str, str]) -> None:
    """spark-submit's options (``driver-memory``, Livy's ``driverMemory``) into the spec."""
    conf = spec_fields.get("spark_conf") or {}
    if not isinstance(conf, dict):
        return  # the spec's own validation names the problem
    try:
        spec_fields["spark_conf"] = spark_options.apply(conf, options)
    except JobRejectedError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    name = spec_fields["spark_conf"].get(spark_options.SPARK_OPTION_KEYS["name"])
    if name is not None and not spec_fields.get("name"):
        spec_fields["name"] = name
