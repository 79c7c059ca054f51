"""A Steward cluster of real processes for the benchmarks (no imports from tests/).

JobManagers and TaskManagers are started by the testing kit
(:class:`steward.testing.processes.ProcessCluster`) against the benchmark's own ZooKeeper, each
in its own process group with its log in the work directory; benchmarks kill them with real
signals. What the benchmarks add: their settings, runners killed at the end, and REST helpers
that use raw JSON over one keep-alive ``httpx.Client`` so that polling costs little and
measures the server, not the client's models (``httpx.get()`` builds a client per call, which
cost 1-1.5 s of polling under load and would be counted as failover time);
:meth:`BenchCluster.client` is the real ``steward.Client`` over the JobManagers, for
submitting and waiting as users do.

:data:`TICKING` is the long-running pipeline of the failover benchmarks: it never touches
Spark (no JVM) and defines no ``initialize`` (no hook process), and appends one ground-truth
line per second of progress to a file outside Steward, so a restarted attempt and any replayed
output show in the file whatever Steward reports.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from _common import progress, wait_until
from steward.client import Client
from steward.testing.processes import Proc, ProcessCluster

ZK_ROOT = "/steward-bench"

TICKING = '''"""Benchmark pipeline: one ground-truth line per second of progress, no Spark."""

import os
import time


def main(ctx):
    truth, seconds = ctx.args[0], float(ctx.args[1])
    deadline = time.monotonic() + seconds
    tick = 0
    with open(truth, "a", buffering=1) as out:
        out.write(f"start {ctx.attempt} {os.getpid()}\\n")
        while time.monotonic() < deadline:
            time.sleep(1.0)
            tick += 1
            out.write(f"tick {ctx.attempt} {tick}\\n")
    return {"ticks": tick}
'''

QUICK = '''"""Benchmark pipeline: returns at once, no Spark."""


def main(ctx):
    return {"ok": True}
'''


class BenchCluster(ProcessCluster):
    """JobManagers and TaskManagers in one namespace of one ZooKeeper (the testing kit's
    :class:`ProcessCluster` with the benchmarks' settings: their own ZooKeeper root, the
    product's heartbeat and replacement timing).

    ``verbose`` runs them with ``-v`` (INFO logs); the peer benchmarks run them without, at
    the CLI's default WARNING level. Only live JobManagers count: :meth:`jobmanagers` and
    :meth:`client` leave out the ones a benchmark killed.
    """

    death_error = RuntimeError

    def __init__(
        self,
        workdir: Path,
        quorum: str,
        cluster_id: str,
        *,
        session_timeout: float = 4.0,
        extra: dict[str, str] | None = None,
        verbose: bool = True,
    ) -> None:
        super().__init__(
            workdir,
            quorum,
            cluster_id,
            root=ZK_ROOT,
            session_timeout=f"{session_timeout:g}s",
            timing={},
            extra=extra,
            verbose=verbose,
        )
        self.session_timeout = session_timeout
        self.http = httpx.Client(timeout=5.0, headers=self.headers, verify=self.tls.context)
        self._jobmanagers_started = 0

    # ------------------------------------------------------------------ processes

    def start_ha(self, slots: int, deadline: float) -> Proc:
        """A leader (``jm-1``), a standby and one TaskManager (``tm-1``) with ``slots``; returns
        the leader once it lists the TaskManager. A crash benchmark replaces each JobManager it
        kills with :meth:`start_next_jobmanager`."""
        self.start_next_jobmanager()
        self.wait_leader(deadline)
        self.start_next_jobmanager()
        self.start_taskmanager("tm-1", slots=slots)
        return self.wait_taskmanagers(1, deadline)

    def crash_leader(self, deadline: float) -> Crash:
        """SIGKILL the serving leader and wait (polling every 5 ms) until the other JobManager
        serves as the leader."""
        leader = self.wait_leader(deadline)
        standby = next(p for p in self.jobmanagers() if p is not leader)
        killed_at, started = time.time(), time.perf_counter()
        leader.signal(signal.SIGKILL)
        wait_until(lambda: self.serving_leader(standby), deadline, "standby serves", 0.005)
        return Crash(leader, standby, killed_at, started, time.perf_counter() - started)

    def start_next_jobmanager(self) -> Proc:
        """One more JobManager, ``jm-<n>``, numbered after the ones this method started."""
        self._jobmanagers_started += 1
        return self.start_jobmanager(f"jm-{self._jobmanagers_started}")

    def start_taskmanager(  # type: ignore[override]
        self, tm_id: str, slots: int, prewarm: int = 0
    ) -> Proc:
        return super().start_taskmanager(
            tm_id, slots, settings={"taskmanager.spark.prewarm-runners": str(prewarm)}
        )

    def spare_ready(self, tm_id: str) -> bool:
        """A warm spare not handed out yet: its own folder still holds its log, saying ready."""
        for log in (self.workdir / "work" / tm_id / ".spares").glob("spare-*/runner.log"):
            with contextlib.suppress(OSError):
                if "spare ready" in log.read_text(errors="replace"):
                    return True
        return False

    def jobmanagers(self) -> list[Proc]:
        return [p for p in super().jobmanagers() if p.alive()]

    def stop(self) -> None:
        """Stop every member, then every runner left behind (attempts run in process groups
        of their own and outlive a TaskManager by design), and close the HTTP client."""
        super().stop()
        self._kill_runners()
        self.http.close()

    def _kill_runners(self) -> None:
        marker = str(self.workdir / "work")
        for process in psutil.process_iter(["cmdline", "cwd"]):
            with contextlib.suppress(psutil.Error):
                cwd = process.info.get("cwd") or ""
                line = " ".join(process.info.get("cmdline") or [])
                if cwd.startswith(marker) or marker in line:
                    process.kill()

    # ------------------------------------------------------------------ REST

    def request(self, proc: Proc, path: str, timeout: float = 5.0) -> httpx.Response:
        return self.http.get(proc.address + path, timeout=timeout)

    def get_json(self, proc: Proc, path: str, timeout: float = 5.0) -> Any | None:
        """The JSON of a 200 answer, else None (errors and refusals included)."""
        with contextlib.suppress(httpx.HTTPError, ValueError):
            answer = self.request(proc, path, timeout)
            if answer.status_code == 200:
                return answer.json()
        return None

    def serving_leader(self, proc: Proc) -> bool:
        """``proc`` leads and has recovered: /readyz answers 200 with role leader."""
        ready = self.get_json(proc, "/readyz")
        return bool(ready and ready.get("role") == "leader")

    def leader(self) -> Proc | None:
        """The first live JobManager that serves as the recovered leader (over the keep-alive
        client: cheap enough to poll while measuring)."""
        for proc in self.jobmanagers():
            if self.serving_leader(proc):
                return proc
        return None

    def wait_leader(self, timeout: float) -> Proc:
        def found() -> Proc | None:
            self.check_alive()
            return self.leader()

        return wait_until(found, timeout, "a serving leader", interval=0.05)

    def view_of(self, proc: Proc) -> Any | None:
        """``proc``'s /v1/cluster, None if it does not answer 200."""
        return self.get_json(proc, "/v1/cluster")

    def wait_taskmanagers(self, count: int, timeout: float) -> Proc:
        """Wait for a serving leader that lists ``count`` TaskManagers; return that leader."""

        def enough() -> Proc | None:
            self.check_alive()
            leader = self.leader()
            view = self.view_of(leader) if leader else None
            return leader if view and len(view["taskmanagers"]) >= count else None

        return wait_until(enough, timeout, f"{count} TaskManager(s) registered", interval=0.1)

    def wait_jobmanagers(self, count: int, timeout: float) -> None:
        """Wait until exactly ``count`` JobManagers contend (dead ones' latches expired) and
        each is ready: a standby then takes over a crash at once (issue 22)."""

        def settled() -> bool:
            self.check_alive()
            views = [self.view_of(p) for p in self.jobmanagers()]
            return (
                bool(views)
                and all(v and len(v["jobmanagers"]) == count for v in views)
                and all(self.get_json(p, "/readyz") for p in self.jobmanagers())
            )

        wait_until(settled, timeout, f"{count} JobManagers contending", interval=0.1)

    def client(self, timeout: float = 60.0) -> Client:
        """A ``steward.Client`` over the live JobManagers' addresses."""
        return super().client(timeout)

    def jobs(self, proc: Proc) -> list[dict[str, Any]] | None:
        """Every job ``proc`` lists, a page of 1,000 at a time (None: it did not answer)."""
        found: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = self.get_json(proc, f"/v1/jobs?limit=1000{cursor}")
            if page is None:
                return None
            found += page["jobs"]
            if not page.get("next"):
                return found
            cursor = f"&cursor={page['next']}"


@dataclass(frozen=True)
class Crash:
    """A leader SIGKILLed (:meth:`BenchCluster.crash_leader`)."""

    killed: Proc
    successor: Proc
    killed_at: float
    """Wall clock (epoch seconds) of the signal, for the processes' log lines."""
    started: float
    """``time.perf_counter()`` at the signal."""
    serves_s: float
    """Seconds from the signal until the successor answered ``/readyz`` as the leader."""


@contextmanager
def bench_cluster(
    workdir: Path,
    quorum: str,
    cluster_id: str,
    session_timeout: float,
    *,
    verbose: bool = True,
    **extra: str,
) -> Iterator[BenchCluster]:
    """A :class:`BenchCluster` in ``workdir/cluster_id`` whose processes are all stopped on the
    way out; ``extra`` are further settings."""
    cluster = BenchCluster(
        workdir / cluster_id,
        quorum,
        cluster_id,
        session_timeout=session_timeout,
        extra=dict(extra),
        verbose=verbose,
    )
    cluster.workdir.mkdir(parents=True, exist_ok=True)
    try:
        yield cluster
    finally:
        cluster.stop()
        progress(f"cluster {cluster_id} stopped")


# ------------------------------------------------------------------------------ ground truth


def read_truth(path: Path) -> list[tuple[str, int, int]]:
    """The pipeline's lines as (kind, attempt, value): start lines carry the pid, tick lines
    the tick number."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("start", "tick"):
            entries.append((parts[0], int(parts[1]), int(parts[2])))
    return entries


def replayed_ticks(path: Path) -> int:
    """Ticks a later attempt emitted again (its tick number was reached by an earlier one)."""
    reached: dict[int, int] = {}
    replayed = 0
    for kind, attempt, value in read_truth(path):
        if kind != "tick":
            continue
        earlier = max((t for a, t in reached.items() if a < attempt), default=0)
        if value <= earlier:
            replayed += 1
        reached[attempt] = max(reached.get(attempt, 0), value)
    return replayed


def tick_count(path: Path) -> int:
    """How many tick lines every attempt together has written."""
    return sum(1 for kind, _, _ in read_truth(path) if kind == "tick")


def configured_default(key: str) -> object | None:
    """The default of a Steward setting, None if this Steward has no such setting."""
    from steward.config import OPTIONS

    return next((option.default for option in OPTIONS if option.key == key), None)


def rss_mib(value: int) -> float:
    return round(value / 2**20, 1)
