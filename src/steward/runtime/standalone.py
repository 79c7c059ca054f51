"""Standalone-master fencing: the next attempt kills what earlier attempts left on the cluster.

On a Spark standalone master (``spark://`` masters) the executors run on the Workers, outside
the runner's process group. When an attempt's driver dies with its host cut off, its
connection reset never reaches the master or the executors: the old application keeps its
executors, and their running tasks, until Spark's network and heartbeat timeouts (minutes).
Killing the attempt's processes, which is what the execution lease waits for, is therefore
not enough. Before attempt N runs any user code, :func:`kill_earlier_applications`:

1. reads the master's ``/json/`` (the ALIVE master's, when ``spark://`` names several);
2. picks the applications of earlier attempts: the ids the leader recorded for them (the
   launch's ``earlier_spark_apps``), and any application named as Steward names attempt
   1..N-1 of this job (an attempt cut off before its id reached the leader);
3. kills each active one through the master's web UI (``POST /app/kill/`` with the page's
   CSRF token, as the UI's own "kill" link does; the master then removes the application and
   tells its Workers to kill the executors);
4. returns only once the master lists none of them as active and no ALIVE Worker's
   ``/json/`` lists a running executor of any of them.

Killing is idempotent (a finished application is not in the master's table: nothing happens).
While the master or a Worker does not answer, it retries with back-off up to ``timeout``, then
raises :class:`StandaloneFencingError`: the attempt fails without ever building its session,
so it never runs beside live executors. The master's web UI port is the job's
``spark.master.ui.port`` (the master's own setting), 8080 by default, and the master must
allow kills (``spark.ui.killEnabled``, on by default).
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from steward.wire.runner_protocol import RunnerError

log = logging.getLogger(__name__)

STANDALONE_SCHEME = "spark://"
UI_PORT_CONF = "spark.master.ui.port"
DEFAULT_UI_PORT = 8080
_HTTP_TIMEOUT = 5.0
_FIRST_BACKOFF = 0.2
_MAX_BACKOFF = 2.0
_CSRF = re.compile(r'name="csrfToken"\s+value="([^"]+)"')


class StandaloneFencingError(RunnerError):
    """An earlier attempt's application could not be killed on the standalone master in time."""


class _NotGoneError(Exception):
    """The master or a Worker did not answer, or the applications are not gone yet."""


def is_standalone(master: str) -> bool:
    return master.startswith(STANDALONE_SCHEME)


def ui_urls(master: str, conf: Mapping[str, str]) -> list[str]:
    """The web UI of each master in ``spark://host1:port1,host2:port2``."""
    port = conf.get(UI_PORT_CONF) or str(DEFAULT_UI_PORT)
    hosts = [part.rsplit(":", 1)[0] for part in master[len(STANDALONE_SCHEME) :].split(",")]
    return [f"http://{host}:{port}" for host in hosts if host]


def earlier_app_names(job_id: str, attempt: int) -> set[str]:
    """The names Steward gives attempts 1..``attempt``-1 of ``job_id`` (a job without its own
    name; see :func:`steward.sparkconf.session_settings.app_name`)."""
    return {f"steward-{job_id}-{earlier}" for earlier in range(1, attempt)}


@dataclass(frozen=True)
class _Targets:
    """What to kill: applications known by id, and by name."""

    ids: frozenset[str]
    names: frozenset[str]

    def match(self, app: Mapping[str, Any]) -> bool:
        return app.get("id") in self.ids or app.get("name") in self.names


def kill_earlier_applications(
    master: str,
    conf: Mapping[str, str],
    *,
    known_ids: Collection[str],
    names: Collection[str],
    timeout: float,
) -> list[str]:
    """Kill the earlier attempts' applications and wait until their executors are gone.

    Returns the ids of the applications this call found active and killed. Raises
    :class:`StandaloneFencingError` if that cannot be done within ``timeout`` seconds.
    """
    targets = _Targets(frozenset(known_ids), frozenset(names))
    deadline = time.monotonic() + timeout
    killed: set[str] = set()
    backoff = _FIRST_BACKOFF
    while True:
        try:
            _round(ui_urls(master, conf), targets, killed)
            return sorted(killed)
        except _NotGoneError as exc:
            if time.monotonic() + backoff > deadline:
                raise StandaloneFencingError(
                    f"could not stop the earlier attempts' applications on {master}: {exc}"
                ) from None
            log.info("earlier applications not gone yet, retrying: %s", exc)
            time.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)


def _round(urls: list[str], targets: _Targets, killed: set[str]) -> None:
    """One look: kill what is active; raise :class:`_NotGoneError` unless everything is gone."""
    ui, state = _alive_master(urls)
    apps = [*state.get("activeapps", []), *state.get("completedapps", [])]
    ids = targets.ids | {str(app["id"]) for app in apps if targets.match(app)}
    active = [str(app["id"]) for app in state.get("activeapps", []) if targets.match(app)]
    for app_id in active:
        _kill(ui, app_id)
        if app_id not in killed:
            log.warning("earlier attempt's application killed on the master app_id=%s", app_id)
        killed.add(app_id)
    if active:
        raise _NotGoneError(
            f"applications still active: {active} (a master with spark.ui.killEnabled=false"
            " or UI ACLs that deny this user ignores the kill)"
        )
    running = _running_executors(state, ids)
    if running:
        raise _NotGoneError(f"executors still running for {running}")


def _alive_master(urls: list[str]) -> tuple[str, Mapping[str, Any]]:
    """The web UI and ``/json/`` of the master that is ALIVE (a standby has no applications)."""
    answers = []
    for url in urls:
        state = _get_json(f"{url}/json/")
        if isinstance(state, dict) and state.get("status") == "ALIVE":
            return url, state
        answers.append(f"{url}: {'no answer' if state is None else state.get('status')}")
    hint = (
        f"; a master's web UI is asked on the job's {UI_PORT_CONF}, {DEFAULT_UI_PORT} when unset"
        if all(answer.endswith("no answer") for answer in answers)
        else ""
    )
    raise _NotGoneError(f"no ALIVE standalone master ({'; '.join(answers)}{hint})")


def _running_executors(state: Mapping[str, Any], ids: Collection[str]) -> list[str]:
    """Ids among ``ids`` that an ALIVE Worker still runs an executor for."""
    running: set[str] = set()
    for worker in state.get("workers", []):
        if worker.get("state") != "ALIVE" or not ids:
            continue
        url = str(worker.get("webuiaddress", ""))
        answer = _get_json(f"{url}/json/") if url else None
        if not isinstance(answer, dict):
            raise _NotGoneError(f"worker {worker.get('id')} at {url!r} does not answer")
        running |= {str(e.get("appid")) for e in answer.get("executors", [])} & set(ids)
    return sorted(running)


def _kill(ui: str, app_id: str) -> None:
    """Ask the master to kill ``app_id``, as its UI's kill link does (the page's CSRF token)."""
    page = _get_text(f"{ui}/")
    token = _CSRF.search(page or "")
    fields = {"id": app_id, "terminate": "true"}
    if token:
        fields["csrfToken"] = token.group(1)
    body = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(f"{ui}/app/kill/", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT):
            pass
    except urllib.error.HTTPError as exc:
        raise _NotGoneError(f"the master refused to kill {app_id}: HTTP {exc.code}") from None
    except OSError as exc:
        raise _NotGoneError(f"the master did not take the kill of {app_id}: {exc}") from None


def _get_text(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT) as response:
            return str(response.read().decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def _get_json(url: str) -> Any:
    text = _get_text(url)
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None
