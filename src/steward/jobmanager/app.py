"""The JobManager's HTTP application: the REST API (:mod:`.rest`, OpenAPI at /openapi.json, docs
at /docs) and the web UI (:mod:`.ui`) behind one authentication middleware.

Assembled here, above both, so the REST API and the UI are siblings: the UI uses the REST
layer's state and errors, the REST layer never imports the UI.

Reads are answered by whichever JobManager is asked: the leader from memory and ZooKeeper, a
standby from ZooKeeper alone (so reads keep working while there is no leader). Writes are
carried out by the leader; a standby forwards them to it, and answers 503 with Retry-After
while no leader is known. Every error is an :class:`ErrorBody` with a machine-readable code.
Every route but ``/healthz`` and ``/readyz`` requires a bearer token (:mod:`.rest.auth`).
"""

from __future__ import annotations

import anyio
from fastapi import FastAPI

from steward.metrics import JobManagerMetrics
from steward.security.asgi import AuthMiddleware
from steward.store.contents import ContentStore
from steward.tls.contexts import ClientTls

from .rest import (
    batch_submission,
    cluster,
    contents,
    doctor,
    events,
    health,
    internal,
    jobs,
    jobs_submit,
    livy,
    logs,
    metrics,
    queues,
    tokens,
)
from .rest.auth import LOGIN_PAGE, PUBLIC_PATHS, SUBMISSION_PATHS, ApiSecurity, document
from .rest.backend import ApiBackend
from .rest.direct import DirectRoutes
from .rest.errors import add_error_handlers
from .rest.forwarding import new_forwarder
from .rest.heartbeat_route import LeanApi
from .rest.openapi_errors import document_bad_requests
from .rest.state import Services, install
from .ui import routes as ui


def create_app(
    backend: ApiBackend,
    security: ApiSecurity,
    *,
    client_tls: ClientTls | None = None,
    event_feed: events.EventFeed | None = None,
    job_metrics: JobManagerMetrics | None = None,
) -> FastAPI:
    """The API of ``backend``; a standby forwards writes verifying the leader with
    ``client_tls`` (default: the system's CAs). ``event_feed``: the journal the event routes
    read (default: one that nothing feeds). ``job_metrics``: what ``/metrics`` serves (default:
    a registry of its own)."""
    app = LeanApi(
        title="Steward",
        summary="A highly available job manager for PySpark pipelines",
        version="1",
    )
    heartbeat_threads = anyio.CapacityLimiter(internal.HEARTBEAT_THREADS)
    app.lean(backend, security.authenticator, heartbeat_threads)
    install(
        app,
        Services(
            backend=backend,
            contents=ContentStore(
                backend.blobs, max_size=backend.config.settings.jobmanager.upload_max_size
            ),
            forwarder=new_forwarder(client_tls),
            heartbeat_threads=heartbeat_threads,
            security=security,
        ),
    )
    logs.install(app, backend, client_tls)
    events.install(app, event_feed or events.EventFeed())
    metrics.install(app, backend, job_metrics or JobManagerMetrics())
    add_error_handlers(app)
    document_bad_requests(app)  # 400, not FastAPI's 422
    # Inside the authentication below: the submission routes, answered without FastAPI's
    # routing (.rest.direct).
    app.add_middleware(
        DirectRoutes,
        routes={
            ("POST", "/v1/jobs"): jobs_submit.submission_route,
            ("POST", "/v1/jobs/batch"): batch_submission.batch_route,
        },
    )
    # Around everything, the OpenAPI document and unknown paths included (rule: no route
    # can forget it).
    app.add_middleware(
        AuthMiddleware,
        authenticator=security.authenticator,
        public_paths=PUBLIC_PATHS,
        certificates=security.client_certificates,
        cookie=True,
        login_page=LOGIN_PAGE,
        limiter=security.limiter,
        submission_paths=SUBMISSION_PATHS,
    )
    # In this order, the OpenAPI document's.
    routers = (
        health.router,
        contents.router,
        cluster.router,
        queues.router,
        doctor.router,
        jobs.router,
        batch_submission.router,
        events.router,
        logs.router,
        tokens.router,
        metrics.router,
        livy.router,
    )
    for router in (*routers, internal.router, ui.router):
        app.include_router(router)
    document(app)
    return app
