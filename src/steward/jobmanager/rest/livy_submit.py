"""``POST /batches`` on the leader: a Livy ``CreateBatchRequest`` into a stored job ``livy-<n>``.

Everything is checked and fetched before a batch id is taken, so a refused request changes
nothing (files already fetched into the content store are unnamed, and its garbage collection
removes them). Then the id comes from the fenced counter (:mod:`steward.store.batch_ids`) and
the job is stored as a ``POST /v1/jobs`` would store it, its files pinned meanwhile. A Livy
``file`` is a spark-submit script: it runs as ``__main__``. What Steward cannot do
(``className``) is a 400 naming the field, never silently ignored; ``proxyUser`` is the job's
``proxy_user``, checked against ``security.proxy-users`` by the route (403 otherwise).

Livy has no field for environment variables: its users set them in ``conf``, as
``spark.executorEnv.X``, ``spark.yarn.appMasterEnv.X`` (YARN's driver in cluster mode) or
``spark.kubernetes.driverEnv.X``. Each also becomes ``X`` in the job's ``env`` (the driver's
environment, which Steward runs in client mode; shown redacted), the driver's own settings
over the executors'; the settings stay in ``spark_conf`` for the executors Spark starts.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from pydantic import ValidationError

from steward.errors import JobExistsError, JobRejectedError, StewardError
from steward.jobmanager.errors import JobResultExistsError
from steward.security.identity import Identity
from steward.store import sources
from steward.store.contents import ContentStore
from steward.wire import redaction, spark_options
from steward.wire.job_options import check_env
from steward.wire.jobs import Artifact, Dependency, DependencyKind, JobGraph, JobSpec, ProgramKind
from steward.wire.livy import BatchRequest, batch_job_id
from steward.wire.rest import JobView

from .archive_checks import check_archives
from .backend import LeaderTerm
from .contents import missing_contents
from .errors import ApiError, describe, raise_for
from .jobs_submit import CHECKED

ID_ATTEMPTS = 3
"""Batch ids tried when ``livy-<n>`` is taken (a job submitted under that name by hand)."""
REFUSED = {
    "className": "Steward runs Python (PySpark) batches only; a JVM main class cannot be run"
    " (leave className out and give a .py file)",
}
ENV_PREFIXES = ("spark.executorEnv.", "spark.yarn.appMasterEnv.", "spark.kubernetes.driverEnv.")
"""Spark settings of an environment variable; a later prefix wins (the driver's own)."""
_DEPENDENCY_FIELDS = {
    "pyFiles": DependencyKind.PY_FILE,
    "files": DependencyKind.FILE,
    "archives": DependencyKind.ARCHIVE,
    "jars": DependencyKind.JAR,
}


def parse(body: bytes) -> BatchRequest:
    """The request, or a 400 naming the field that is wrong, missing or refused."""
    try:
        fields = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "bad_request", f"the body is not JSON: {exc}") from None
    if not isinstance(fields, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    for name, why in REFUSED.items():
        if fields.get(name) is not None:
            raise ApiError(400, "unsupported_field", f"{name}: {why}")
    try:
        request = BatchRequest.model_validate(fields)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", describe(exc.errors())) from None
    if not request.file:
        raise ApiError(400, "bad_request", "file: required (the batch's .py file)")
    return request


def prepare(
    request: BatchRequest, contents: ContentStore, allowed: tuple[str, ...], most: int
) -> tuple[JobSpec, Artifact]:
    """The job's spec (its id a placeholder) and its file (at most ``most`` bytes): every file
    fetched, every check done; an ApiError (400) otherwise."""
    assert request.file is not None  # parse() refused a request without one
    try:
        filename, data = sources.read_bytes("file", request.file, allowed, most)
        dependencies = _fetch_dependencies(request, contents, allowed, most)
        spec = _spec(request, dependencies)
        redaction.check_conf(spec.spark_conf)
        artifact, spec = CHECKED.check(filename, data, spec)
        return spec, artifact
    except JobRejectedError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    except StewardError as exc:
        raise_for(exc)


def store(
    dispatcher: LeaderTerm,
    contents: ContentStore,
    prepared: tuple[JobSpec, Artifact],
    *,
    caller: Identity,
    body: bytes,
    team: str,
) -> JobView:
    """The batch stored under the next free batch id, as ``team``'s."""
    spec, artifact = prepared
    digest = hashlib.sha256(body).hexdigest()
    try:
        with dispatcher.content_gc.pinned(d.sha256 for d in spec.dependencies):
            missing = missing_contents(contents, spec.dependencies)
            if missing is not None:  # removed by GC before the pin: fetch it again
                raise ApiError(400, "missing_contents", missing)
            check_archives(contents, spec.dependencies)
            for _ in range(ID_ATTEMPTS):
                job_id = batch_job_id(dispatcher.next_batch_id())
                update = {"job_id": job_id, "submitter": caller.name, "team": team}
                named = spec.model_copy(update=update)
                graph = JobGraph(
                    spec=named,
                    artifact=artifact,
                    submitted_at=time.time(),
                    submission_sha256=digest,
                )
                try:
                    return dispatcher.submit(named, graph)
                except (JobExistsError, JobResultExistsError):
                    continue  # a job took that name by hand: the next id
    except StewardError as exc:
        raise_for(exc)
    raise ApiError(
        503, "unavailable", "no free batch id found; retry", headers={"Retry-After": "1"}
    )


def _spec(request: BatchRequest, dependencies: list[Dependency]) -> JobSpec:
    try:
        conf = spark_options.apply(request.spark_conf(), request.sizing())
    except JobRejectedError as exc:
        raise ApiError(400, "bad_request", f"conf: {exc}") from None
    fields: dict[str, Any] = {
        "job_id": batch_job_id(0),
        "name": request.name or "",
        "args": request.arguments(),
        "spark_conf": conf,
        "env": driver_env(conf),
        "program": ProgramKind.SCRIPT,
        "dependencies": dependencies,
        "proxy_user": request.proxyUser,
    }
    try:
        return JobSpec.model_validate(fields)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", describe(exc.errors())) from None


def driver_env(conf: dict[str, str]) -> dict[str, str]:
    """The environment variables ``conf`` sets (:data:`ENV_PREFIXES`), or a 400 naming the
    setting whose name cannot be one."""
    env = {}
    for prefix in ENV_PREFIXES:
        for key, value in conf.items():
            if key.startswith(prefix):
                name = key.removeprefix(prefix)
                try:
                    check_env({name: value})
                except ValueError as exc:
                    raise ApiError(400, "bad_request", f"conf: {key}: {exc}") from None
                env[name] = value
    return env


def _fetch_dependencies(
    request: BatchRequest, contents: ContentStore, allowed: tuple[str, ...], most: int
) -> list[Dependency]:
    limit = contents.max_size or most
    found = []
    for field, kind in _DEPENDENCY_FIELDS.items():
        for position, source in enumerate(getattr(request, field) or []):
            where, _, alias = (
                source.partition("#") if kind is DependencyKind.ARCHIVE else (source, "", "")
            )
            name = f"{field}[{position}]"
            fetched = sources.store(name, where, allowed, contents, limit)
            try:
                found.append(
                    Dependency(
                        kind=kind,
                        filename=fetched.filename,
                        sha256=fetched.sha256,
                        size=fetched.size,
                        alias=alias or None,
                    )
                )
            except ValidationError as exc:
                raise ApiError(400, "bad_request", f"{name}: {describe(exc.errors())}") from None
    return found
