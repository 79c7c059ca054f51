"""Spark's standalone cluster for tests and benchmarks: one Master and one Worker on loopback.

::

    with standalone_cluster(tmp_path / "spark") as cluster:
        submit(..., spark_conf={"spark.master": cluster.master_url})
        app = cluster.wait_app("steward-job-1", timeout=120)   # from the master's /json/
        assert cluster.executors_of(app.id)                    # from the worker's /json/

The master's web UI answers ``GET /json/`` with its ``status``, ``workers``, ``activeapps`` and
``completedapps`` (id, name, start time, duration, cores granted): :class:`MasterState` reads
it. A worker's ``/json/`` lists its ``executors`` and ``finishedexecutors``, each with the
``appid`` it ran for. The Master and the Worker are SIGKILLed (their whole process groups, which
hold the executors) when the context ends, also after an error.

``host`` and ``prefix`` put the cluster elsewhere than loopback: a partition test runs it in
a network namespace of its own (``prefix`` is then ``ip netns exec <ns>``, ``host`` that
namespace's address) and reads its ``/json/`` from the private network.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steward.testing.ports import free_port
from steward.testing.spark import (
    LOOPBACK,
    SparkProcess,
    http_json,
    master_command,
    spark_env,
    spawn,
    worker_command,
)
from steward.testing.waiting import wait_until

log = logging.getLogger(__name__)

_POLL = 0.1


@dataclass(frozen=True)
class SparkApp:
    """An application as the master's ``/json/`` lists it (times in epoch milliseconds)."""

    id: str
    name: str
    state: str
    cores: int
    start_ms: int
    duration_ms: int

    @property
    def end_ms(self) -> int:
        """When the master saw it end (``start + duration``; "now" for an active one)."""
        return self.start_ms + self.duration_ms

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> SparkApp:
        return cls(
            id=str(value["id"]),
            name=str(value.get("name", "")),
            state=str(value.get("state", "")),
            cores=int(value.get("cores", 0)),
            start_ms=int(value.get("starttime", 0)),
            duration_ms=int(value.get("duration", 0)),
        )


@dataclass(frozen=True)
class MasterState:
    """One reading of a standalone master's ``/json/``."""

    status: str
    active: tuple[SparkApp, ...]
    completed: tuple[SparkApp, ...]
    alive_workers: int
    cores_used: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> MasterState:
        workers = value.get("workers", [])
        return cls(
            status=str(value.get("status", "")),
            active=tuple(SparkApp.from_json(app) for app in value.get("activeapps", [])),
            completed=tuple(SparkApp.from_json(app) for app in value.get("completedapps", [])),
            alive_workers=sum(1 for w in workers if w.get("state") == "ALIVE"),
            cores_used=int(value.get("coresused", 0)),
            raw=value,
        )

    def apps(self) -> tuple[SparkApp, ...]:
        """Completed and active applications, oldest first."""
        return tuple(sorted((*self.completed, *self.active), key=lambda app: app.start_ms))

    def named(self, name: str) -> list[SparkApp]:
        return [app for app in self.apps() if app.name == name]


class StandaloneCluster:
    """A standalone Master and one Worker (``cores``, ``memory``) under ``workdir``."""

    def __init__(
        self,
        workdir: Path,
        *,
        cores: int = 2,
        memory: str = "1g",
        host: str = LOOPBACK,
        prefix: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.cores = cores
        self.memory = memory
        self.host = host
        self.prefix = list(prefix)
        self.port = free_port()
        self.webui_port = free_port()
        self.worker_webui_port = free_port()
        self.processes: list[SparkProcess] = []

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def start(self, timeout: float) -> StandaloneCluster:
        """Start the Master, then the Worker; return once the Worker is registered ALIVE."""
        env = spark_env(self.workdir, host=self.host)
        master = [*self.prefix, *master_command(self.port, self.webui_port, self.host)]
        self.processes.append(spawn("master", master, self.workdir, env))
        argv = worker_command(
            self.master_url,
            webui_port=self.worker_webui_port,
            cores=self.cores,
            memory=self.memory,
            work_dir=self.workdir / "worker",
            host=self.host,
        )
        self.processes.append(spawn("worker", [*self.prefix, *argv], self.workdir, env))
        wait_until(
            self._worker_alive, timeout, "the Spark worker registered with the master", _POLL
        )
        log.info("spark standalone ready master=%s webui=%s", self.master_url, self.webui_url)
        return self

    def _worker_alive(self) -> bool:
        self.check_alive()
        state = self.state()
        return state is not None and state.status == "ALIVE" and state.alive_workers > 0

    def state(self) -> MasterState | None:
        """The master's ``/json/`` now, or None while it does not answer."""
        value = http_json(f"{self.webui_url}/json/")
        return MasterState.from_json(value) if isinstance(value, dict) else None

    def worker_json(self) -> Mapping[str, Any] | None:
        value = http_json(f"http://{self.host}:{self.worker_webui_port}/json/")
        return value if isinstance(value, dict) else None

    def executors_of(self, app_id: str) -> list[Mapping[str, Any]]:
        """The executors (running and finished) the Worker ran for application ``app_id``."""
        worker = self.worker_json() or {}
        executors = [*worker.get("executors", []), *worker.get("finishedexecutors", [])]
        return [e for e in executors if e.get("appid") == app_id]

    def wait_app(self, name: str, timeout: float, *, active: bool = False) -> SparkApp:
        """The first application named ``name`` the master lists (among its active ones only
        if ``active``)."""

        def find() -> SparkApp | None:
            state = self.state()
            if state is None:
                return None
            apps = state.active if active else state.apps()
            return next((app for app in apps if app.name == name), None)

        return wait_until(find, timeout, f"application {name} on the master", _POLL)

    def check_alive(self) -> None:
        for process in self.processes:
            process.check_alive()

    def stop(self) -> None:
        """SIGKILL the Worker's group (its executors too), then the Master's."""
        for process in reversed(self.processes):
            process.kill()
        log.info("spark standalone stopped master=%s", self.master_url)


@contextmanager
def standalone_cluster(
    workdir: Path,
    *,
    cores: int = 2,
    memory: str = "1g",
    timeout: float = 120.0,
    host: str = LOOPBACK,
    prefix: Sequence[str] = (),
) -> Iterator[StandaloneCluster]:
    """A started :class:`StandaloneCluster`, stopped for sure on the way out."""
    cluster = StandaloneCluster(workdir, cores=cores, memory=memory, host=host, prefix=prefix)
    try:
        yield cluster.start(timeout)
    finally:
        cluster.stop()
