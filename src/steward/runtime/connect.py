"""Spark Connect fencing: one server-side session per attempt, closed by the next attempt.

On Spark Connect (``sc://`` masters) the work runs in the server, not in the runner's process
group: killing a runner leaves its operations running there (the server keeps a detached
operation for ``spark.connect.execute.manager.detachedTimeout``, 5 minutes by default, and the
session for an hour). Killing the attempt's processes, which is what the execution lease waits
for, is therefore not enough. What this module adds, and what it relies on in Spark's Connect
server (checked against Spark 4.3's server by ``tests/e2e/spark_cluster/``):

1. **A known session per attempt.** Attempt N of job J uses the Connect session id
   :func:`session_id` ``(J, N, scope)``, a UUID5, carried in the URL (:func:`remote_url`,
   ``sc://host:port/;session_id=<uuid>``), also as ``SPARK_REMOTE`` for sessions the pipeline
   builds itself. A server session is keyed by (user_id, session_id); the URL's ``user_id``, if
   any, is kept, so every attempt of a job must be started with the same one.
2. **The successor fences its predecessors first.** Before attempt N runs any user code,
   :func:`interrupt_earlier_attempts` attaches to the session of each attempt 1..N-1, calls
   ``interruptAll`` (the server cancels the operations and their Spark jobs), waits until none
   of the interrupted operations is still running or terminating (the ``GetStatus`` RPC), and
   releases the session. A released session id is tombstoned by the server
   (``INVALID_HANDLE.SESSION_CLOSED`` for any later request, also from a frozen attempt that
   wakes up): a fenced attempt can start nothing more. A session that never existed is created
   empty and released, which tombstones it too; one already closed means nothing to interrupt.
3. **An attempt cleans up after itself.** :func:`interrupt_own` interrupts the session's
   operations when an attempt ends (SIGTERM, failure or success), before the session is
   released by ``SparkSession.stop()``.

``scope`` keeps the ids of different Steward clusters (or of a job id reused after its result
was removed) apart on a shared server: pass something unique to the job's incarnation and
stable across its attempts, such as the launch's ``checkpoint_dir``.

The server remembers ``spark.connect.session.manager.closedSessionsTombstonesSize`` closed
sessions (1000 by default); a server shared by many jobs should raise it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from steward.wire.runner_protocol import RunnerError
from steward.wire.warm import CONNECT_SCHEME

log = logging.getLogger(__name__)

SESSION_ID = "session_id"
REMOTE_ENV = "SPARK_REMOTE"
_NAMESPACE = uuid.UUID("6f1d8c2e-57a4-4c53-9a55-2f0b8a3c9e17")
_SESSION_CLOSED = "INVALID_HANDLE.SESSION_CLOSED"
# GetStatusResponse.OperationStatus.OperationState: RUNNING, TERMINATING.
_LIVE_STATES = frozenset({2, 3})
_POLL = 0.1


class ConnectFencingError(RunnerError):
    """The Spark Connect operations of an earlier attempt could not be interrupted in time."""


def is_connect(master: str) -> bool:
    return master.startswith(CONNECT_SCHEME)


def session_id(job_id: str, attempt: int, scope: str = "") -> str:
    """The Connect session id of attempt ``attempt`` of ``job_id`` (a UUID, deterministic)."""
    return str(uuid.uuid5(_NAMESPACE, f"{scope}\0{job_id}\0{attempt}"))


def remote_url(master: str, job_id: str, attempt: int, *, scope: str = "") -> str:
    """``master`` (an ``sc://`` URL) with the attempt's ``session_id``, other parameters kept.

    A ``session_id`` already in ``master`` is replaced: a fixed one would let two attempts share
    a session, and an attempt could not be told apart from its predecessor.
    """
    if not is_connect(master):
        raise ValueError(f"not a Spark Connect URL: {master!r}")
    base, params = _split(master)
    if SESSION_ID in params:
        log.warning("session_id of the master replaced by the attempt's job=%s", job_id)
    params[SESSION_ID] = session_id(job_id, attempt, scope)
    return _join(base, params)


def attempt_url(master: str, environ: Mapping[str, str]) -> str:
    """The URL an attempt's session uses: ``master`` if it names a session, else
    ``SPARK_REMOTE`` if that names one on the same server (the runner's choice), else
    ``master``."""
    base, params = _split(master)
    if SESSION_ID in params:
        return master
    remote = environ.get(REMOTE_ENV, "")
    if is_connect(remote) and _split(remote)[0] == base and SESSION_ID in url_params(remote):
        return remote
    return master


def url_params(url: str) -> dict[str, str]:
    """The ``;key=value`` parameters of an ``sc://`` URL."""
    return _split(url)[1]


def interrupt_earlier_attempts(
    master: str, job_id: str, attempt: int, timeout: float, *, scope: str = ""
) -> int:
    """Interrupt and close the Connect sessions of attempts 1..``attempt``-1 of ``job_id``.

    Returns how many operations were interrupted (0 when no earlier session had any running).
    Returns only once every interrupted operation is no longer running on the server, and each
    earlier session is released (closed for good). Raises :class:`ConnectFencingError` if the
    server cannot be reached, or the operations do not stop, within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    interrupted = 0
    for earlier in range(attempt - 1, 0, -1):
        url = remote_url(master, job_id, earlier, scope=scope)
        interrupted += _fence_session(url, deadline)
    if interrupted:
        log.info(
            "earlier attempts' connect operations interrupted job=%s attempt=%d operations=%d",
            job_id,
            attempt,
            interrupted,
        )
    return interrupted


def interrupt_own(session: Any, timeout: float) -> int:
    """Interrupt the operations of ``session`` (a Connect SparkSession), waiting up to
    ``timeout`` seconds until they stopped; log, never raise. Returns how many there were."""
    try:
        client = session.client
        ids = list(client.interrupt_all() or [])
        _wait_stopped(client, ids, time.monotonic() + timeout)
    except Exception as exc:
        log.warning("could not interrupt the session's connect operations: %s", exc)
        return 0
    if ids:
        log.info("connect operations interrupted operations=%d", len(ids))
    return len(ids)


# ------------------------------------------------------------------------------ one session


def _fence_session(url: str, deadline: float) -> int:
    """Interrupt the operations of the session in ``url``, wait for them, release it."""
    while True:
        try:
            return _interrupt_and_release(url, deadline)
        except ConnectFencingError:
            raise
        except Exception as exc:
            if _SESSION_CLOSED in str(exc):
                return 0  # released before: nothing can run in it any more
            if time.monotonic() >= deadline:
                raise ConnectFencingError(
                    f"could not fence the earlier attempt's connect session: {exc}"
                ) from exc
            log.warning("connect server not answering, retrying: %s", _first_line(exc))
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _interrupt_and_release(url: str, deadline: float) -> int:
    from pyspark.sql.connect.client import SparkConnectClient

    # No retries of the client's own (they wait up to 10 minutes): the deadline is ours.
    client = SparkConnectClient(connection=url, retry_policy={"max_retries": 0})
    try:
        ids = list(client.interrupt_all() or [])
        _wait_stopped(client, ids, deadline)
        client.release_session()
        return len(ids)
    finally:
        client.close()


def _wait_stopped(client: Any, ids: list[str], deadline: float) -> None:
    """Wait until none of the operations ``ids`` is running or terminating on the server."""
    while ids:
        try:
            response = client._get_operation_statuses(ids)  # private in 4.3; GetStatus RPC
        except AttributeError:  # an older client: the interrupt alone has to do
            return
        live = [s.operation_id for s in response.operation_statuses if s.state in _LIVE_STATES]
        if not live:
            return
        if time.monotonic() >= deadline:
            raise ConnectFencingError(f"connect operations still running: {live}")
        time.sleep(_POLL)


# ------------------------------------------------------------------------------ URLs


def _split(url: str) -> tuple[str, dict[str, str]]:
    """``sc://host:port/;k=v;k2=v2`` -> (``sc://host:port``, {k: v, k2: v2})."""
    base, _, tail = url.partition("/;")
    params: dict[str, str] = {}
    for part in tail.split(";"):
        if part:
            key, _, value = part.partition("=")
            params[key] = value
    return base.rstrip("/"), params


def _join(base: str, params: dict[str, str]) -> str:
    return base + "/;" + ";".join(f"{key}={value}" for key, value in params.items())


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
