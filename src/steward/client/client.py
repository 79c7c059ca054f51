"""``steward.Client``: the Python client of the JobManagers' REST API.

Any JobManager answers (standbys serve reads and forward writes to the leader); the client
sends every request through :class:`steward.client.failover.Failover`, which tries each address and
retries them all with backoff until the client's ``timeout``.

A submission is the one request that is not naturally safe to repeat: a POST whose answer was
lost may have been accepted. The client therefore always sends a job id (``<stem>-<8 hex>``
when the caller gives none) and the same body on every try, and a "job exists" answer for
that id whose submission digest is its own counts as success: it returns that job
(:mod:`steward.client.submission`). ``submit_many`` sends many in ``POST /v1/jobs/batch``
requests, with the same guarantee per job (:mod:`steward.client.batches`).

Errors are Steward's exception tree, with the server's message: ``JobNotFoundError``,
``JobExistsError``, ``JobTerminatedError`` (with the result), ``JobRejectedError`` (a bad spec,
artifact or size), ``NoLeaderError``, ``ClusterUnreachableError``, otherwise ``ApiError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from steward.client import connection, job_files, packaged, specs, submission, waiting
from steward.client import tokens as admin_tokens
from steward.client.batches import BatchSender, prepare_many
from steward.client.discovery import discover_addresses, rediscovery
from steward.client.failover import (
    DEFAULT_BACKOFF,
    DEFAULT_REQUEST_TIMEOUTS,
    Backoff,
    RequestTimeouts,
    error_body,
)
from steward.client.listing import JobFilter, pages
from steward.client.log_stream import attempt_log
from steward.client.responses import api_error, decode, job_path, latest_attempt
from steward.client.uploads import Uploads
from steward.config import Configuration
from steward.errors import StewardError
from steward.wire.doctor import DoctorReport
from steward.wire.jobs import JobKind, ProgramKind, RestartStrategy
from steward.wire.logs import LogQuery
from steward.wire.queues import QueueList
from steward.wire.rest import ClusterView, JobList, JobView, LeadershipView, LeaderView, ResultView
from steward.wire.tokens import CreatedToken, Role, TokenList, TokenView


class Client:
    """Talks to a Steward cluster. Use as a context manager, or call :meth:`close`.

    ``addresses``: JobManager URLs; None finds them (:mod:`steward.client.discovery`) from
    ``config`` (default: :func:`steward.config.load`) and the working directory. An
    ``https://`` JobManager is verified with ``rest.ssl.ca`` of ``config`` (loaded when not
    given: a local cluster's own CA in its folder), else the system's CAs. ``timeout``:
    how long one call keeps trying every address before it gives up. ``token``: the bearer
    token to send; None finds one (:func:`steward.security.credentials.find_token`:
    ``$STEWARD_TOKEN``, ``client.token-file``, the local cluster's ``.steward/admin.token``).
    """

    def __init__(
        self,
        addresses: Sequence[str] | None = None,
        *,
        config: Configuration | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        request_timeouts: RequestTimeouts = DEFAULT_REQUEST_TIMEOUTS,
        token: str | None = None,
        workdir: Path | None = None,
    ) -> None:
        self._failover = connection.failover(
            addresses,
            config=config,
            workdir=Path.cwd() if workdir is None else workdir,
            timeout=timeout,
            transport=transport,
            backoff=backoff,
            request_timeouts=request_timeouts,
            token=token,
        )
        self._uploads = Uploads(self._failover)
        self._pipelines = packaged.Pipelines()  # submitted again: not read and encoded again
        self._batches = BatchSender(self._failover, self._uploads, self.job)

    @classmethod
    def discover(
        cls,
        config: Configuration,
        workdir: Path | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        token: str | None = None,
    ) -> Client:
        """A client for the cluster ``config`` names, as seen from ``workdir`` (default: cwd):
        ``rest.address``, else ``<workdir>/.steward/cluster.json``, else ZooKeeper."""
        workdir = Path.cwd() if workdir is None else workdir
        client = cls(
            discover_addresses(config, workdir),
            config=config,
            timeout=timeout,
            transport=transport,
            token=token,
            workdir=workdir,
        )
        client._failover.rediscover = rediscovery(config, workdir)
        return client

    @property
    def addresses(self) -> list[str]:
        """The JobManager URLs, the one that answered last first."""
        return list(self._failover.addresses)

    @property
    def timeout(self) -> float:
        """How long one call keeps trying every address before it gives up."""
        return self._failover.timeout

    # ------------------------------------------------------------------ jobs

    def submit(
        self,
        pipeline: Path | str,
        *,
        args: Sequence[str] = (),
        name: str | None = None,
        job_id: str | None = None,
        slots: int | None = None,
        restart: RestartStrategy | Mapping[str, Any] | None = None,
        spark_conf: Mapping[str, str] | None = None,
        entrypoint: str | None = None,
        kind: JobKind | str | None = None,
        labels: Mapping[str, str] | None = None,
        team: str | None = None,
        program: ProgramKind | str | None = None,
        py_files: Sequence[str | Path] = (),
        files: Sequence[str | Path] = (),
        archives: Sequence[str] = (),
        jars: Sequence[str | Path] = (),
        requirements: Sequence[str] | str | Path | None = None,
        timeout: float | str | timedelta | None = None,
        env: Mapping[str, str] | None = None,
        notify: Sequence[str] = (),
        queue: str | None = None,
        priority: int | None = None,
        max_concurrent: int | None = None,
        proxy_user: str | None = None,
    ) -> JobView:
        """Submit the pipeline at ``pipeline`` (a .py file, a folder or a .zip).

        ``py_files``, ``files``, ``archives`` (``path`` or ``path#alias``) and ``jars`` are
        spark-submit's options of the same names; ``requirements`` is a list of pip
        requirement lines or a requirements file, built into a venv on the TaskManager.
        ``timeout`` (seconds, a duration such as ``"2h"``, or a timedelta) cancels the job
        that long after its submission (reason TIMEOUT); ``env`` sets environment variables
        of its driver's process (views show them redacted by the settings' rule); ``notify``
        the job's own webhooks, ``URL`` or ``URL:EVENTS`` (``notifications.allowed-urls``);
        ``team`` the team that owns the job (one the token is in; default: its only one). Each
        file is hashed once until it changes, and asked about and uploaded once per client
        (skipped when the cluster has it; sent again, once, if the leader says it lost it:
        :mod:`steward.client.uploads`). ``queue``, ``priority`` and ``max_concurrent`` (jobs
        of its name at once): how it waits for slots. ``proxy_user``: the OS user its driver
        runs as (security.proxy-users must grant it). Many jobs: :meth:`submit_many`.
        Unset options take the server's defaults. A bad path or spec is a :class:`JobRejectedError`
        before any request is made.
        """
        named = {"py_files": py_files, "files": files, "archives": archives, "jars": jars}
        given = {
            "job_id": job_id,
            "args": args,
            "restart": restart,
            "name": name,
            "slots": slots,
            "spark_conf": spark_conf,
            "entrypoint": entrypoint,
            "kind": kind,
            "labels": labels,
            "team": team,
            "program": program,
            "dependencies": None,  # the files named, in this place of the body
            "requirements": requirements,
            "timeout": timeout,
            "env": env,
            "notifications": notify,
            "queue": queue,
            "priority": priority,
            "max_concurrent": max_concurrent,
            "proxy_user": proxy_user,
        }
        body, local = specs.submit_body(self._pipelines, Path(pipeline), named, given)
        return self._uploads.sent_with(
            local, lambda: submission.send(self._failover, body, self.job), self.upload
        )

    def submit_many(
        self,
        pipeline: Path | str,
        jobs: Iterable[Mapping[str, Any]],
        *,
        py_files: Sequence[str | Path] = (),
        files: Sequence[str | Path] = (),
        archives: Sequence[str] = (),
        jars: Sequence[str | Path] = (),
        batch_size: int = 50,
    ) -> list[JobView | StewardError]:
        """Submit one job per item of ``jobs`` (JobSpec fields: ``job_id``, ``args``, ``name``,
        ``labels``...; an id is made for a job without one), each running the pipeline at
        ``pipeline`` and naming the same files, ``batch_size`` jobs a request
        (``POST /v1/jobs/batch``, at most 100). The pipeline is packaged, and the files hashed
        and uploaded, once. Returns per job, in order, its view or the error :meth:`submit`
        would have raised for it (JobExistsError, JobRejectedError...). A bad spec raises
        before any request; a batch no JobManager took raises (earlier batches stay stored).
        Each job carries the pipeline and a batch's body is bounded as one submission's (64
        MiB of artifacts in all, 413 over): for a large pipeline, a smaller ``batch_size``.
        """
        local = job_files.collect(py_files=py_files, files=files, archives=archives, jars=jars)
        items = prepare_many(Path(pipeline), jobs, local)
        for local_file in local:
            self.upload(local_file)
        return self._batches.send_all(items, local, batch_size)

    def upload(self, local_file: job_files.LocalFile) -> bool:
        """Store one file a job names in the cluster, unless it is there; True if sent.

        Asked about once per client: a file the cluster holds, or accepted, is not asked about
        again (:mod:`steward.client.uploads`). The upload streams the file.
        """
        return self._uploads.ensure(local_file)

    def submit_raw(self, spec: Mapping[str, Any], filename: str, data: bytes) -> JobView:
        """Submit ``spec`` (JobSpec fields) and the artifact bytes as they are.

        The spec is not checked here (the server answers a bad one with JobRejectedError);
        only a missing ``job_id`` is filled in, so that a retry is recognised
        (:mod:`steward.client.submission`).
        """
        return submission.send(self._failover, specs.raw_body(spec, filename, data), self.job)

    def jobs(self, where: JobFilter | None = None, limit: int | None = None) -> list[JobView]:
        """Every job the cluster knows (matching ``where``), live ones and those with a
        result, oldest first; with ``limit``, only the newest ``limit``. Read page by page."""
        found = [view for page in self.job_pages(where, limit) for view in page.jobs]
        return sorted(reversed(found[:limit]), key=lambda view: view.submitted_at or 0.0)

    def job_pages(
        self, where: JobFilter | None = None, limit: int | None = None
    ) -> Iterator[JobList]:
        """The pages of ``GET /v1/jobs``, newest first (each one request, as it is read)."""
        return pages(
            lambda path: decode(JobList, self._call("GET", path)), where or JobFilter(), limit
        )

    def job(self, job_id: str) -> JobView:
        return decode(JobView, self._call("GET", job_path(job_id), job_id=job_id))

    def cancel(self, job_id: str) -> JobView:
        """Ask the cluster to cancel the job; returns at once (CANCELLING) with its view."""
        return decode(JobView, self._call("POST", f"{job_path(job_id)}/cancel", job_id=job_id))

    def result(self, job_id: str) -> ResultView:
        """The outcome of a terminated job; :class:`ApiError` ``job_not_terminated`` before."""
        return decode(ResultView, self._call("GET", f"{job_path(job_id)}/result", job_id=job_id))

    def wait(
        self,
        job_id: str,
        timeout: float | None = None,
        poll: float = 0.5,
        on_update: Callable[[JobView], None] | None = None,
    ) -> ResultView:
        """Wait until the job terminates and return its result.

        Follows the job's live events (:mod:`steward.client.events`: one request per change,
        none while nothing happens; it survives a failover); ``on_update`` gets the job's view
        at the start and after every change. ``poll`` is the interval of the fallback against
        a JobManager without events (it answers 404). :class:`WaitTimeoutError` after
        ``timeout`` seconds (None: wait as long as it takes).
        """
        return waiting.wait(
            self, self._failover, job_id, timeout=timeout, poll=poll, on_update=on_update
        )

    # ------------------------------------------------------------------ logs

    def log(
        self,
        job_id: str,
        attempt: int | None = None,
        offset: int = 0,
        tail: int | None = None,
        follow: bool = False,
    ) -> Iterator[bytes]:
        """An attempt's log (default: the job's latest attempt), in blocks of bytes as they
        come, from any JobManager (:mod:`steward.client.log_stream`): from byte ``offset``, or
        its last ``tail`` lines; ``follow``: until the attempt ends. Refusals (no such
        attempt, removed by the retention, its TaskManager gone) are raised by this call."""
        job_path(job_id)  # checks the id before it reaches a URL
        if attempt is None:
            attempt = latest_attempt(self.job(job_id))
        query = LogQuery(offset=offset, tail=tail, follow=follow)
        return attempt_log(self._failover, job_id, attempt, query)

    # ------------------------------------------------------------------ cluster

    def cluster(self) -> ClusterView:
        return decode(ClusterView, self._call("GET", "/v1/cluster"))

    def queues(self) -> QueueList:
        """The queues, their shares and use, as the leader's latest scheduling pass found them."""
        return decode(QueueList, self._call("GET", "/v1/queues"))

    def leader(self) -> LeaderView | None:
        """The leading JobManager, or None while there is none."""
        return self.cluster().leader

    def leadership(self) -> LeadershipView:
        """The latest terms of leadership, oldest first, and the current leader."""
        return decode(LeadershipView, self._call("GET", "/v1/cluster/leadership"))

    def doctor(self, *, verify_blobs: bool = False) -> DoctorReport:
        """What ``steward doctor`` finds (any JobManager answers, a standby too);
        ``verify_blobs`` reads every blob back (one read per job)."""
        path = "/v1/doctor?verify_blobs=true" if verify_blobs else "/v1/doctor"
        return decode(DoctorReport, self._call("GET", path))

    # ------------------------------------------------------------------ tokens (admin)

    def create_token(
        self,
        name: str,
        role: Role | str,
        *,
        expires_in: float | None = None,
        teams: Sequence[str] = (),
    ) -> CreatedToken:
        """A new token for ``name`` with ``role`` in ``teams`` (none: the cluster's default
        team): its ``token`` is shown this once."""
        return admin_tokens.create(self._failover, name, role, expires_in, teams)

    def tokens(self) -> list[TokenView]:
        """Every token (never its secret)."""
        return decode(TokenList, self._call("GET", "/v1/tokens")).tokens

    def revoke_token(self, token_id: str) -> None:
        """Revoke the token ``token_id``: refused by every JobManager from now on."""
        self._call("DELETE", admin_tokens.path_of(token_id))

    def close(self) -> None:
        self._failover.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ transport

    def _call(
        self, method: str, path: str, body: Any = None, *, job_id: str | None = None
    ) -> httpx.Response:
        """A successful (2xx) answer from any JobManager, or the mapped error."""
        response, _maybe_accepted = self._failover.send(method, path, body)
        if response.is_success:
            return response
        raise api_error(response, error_body(response), job_id)
