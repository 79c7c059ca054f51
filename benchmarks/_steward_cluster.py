"""A Steward cluster of real processes for the benchmarks that compare Steward with a peer.

JobManagers and TaskManagers run as ``python -m steward.cli -D key=value ... jobmanager|
taskmanager`` (as tests/e2e/processes.py starts them; benchmarks do not import tests/), each in
its own process group, logging under ``<workdir>/logs``. The benchmark signals them with real
signals and reads the cluster through its REST API.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from _common import wait_until
from _spark_standalone import free_port
from steward.client import Client

ROOT = "/steward-bench"


@dataclass
class Proc:
    role: str
    id: str
    popen: subprocess.Popen[bytes]
    log: Path
    address: str = ""
    signalled: bool = False

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        self.signalled = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, signum)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@dataclass
class StewardCluster:
    """JobManagers and TaskManagers of one cluster id, started on demand."""

    workdir: Path
    quorum: str
    cluster_id: str
    session_timeout: str = "10s"
    extra: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)

    @property
    def settings(self) -> dict[str, str]:
        return {
            "high-availability.zookeeper.quorum": self.quorum,
            "high-availability.zookeeper.root": ROOT,
            "high-availability.cluster-id": self.cluster_id,
            "high-availability.zookeeper.session-timeout": self.session_timeout,
            "high-availability.storage-dir": f"file://{self.workdir / 'storage'}",
            "taskmanager.workdir": str(self.workdir / "work"),
            **self.extra,
        }

    def _argv(self, *tail: str, **overrides: str) -> list[str]:
        argv = [sys.executable, "-m", "steward.cli"]
        for key, value in {**self.settings, **overrides}.items():
            argv += ["-D", f"{key}={value}"]
        return [*argv, *tail]

    def _spawn(self, role: str, proc_id: str, argv: list[str]) -> Proc:
        log = self.workdir / "logs" / f"{proc_id}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            popen = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.workdir,
            )
        proc = Proc(role, proc_id, popen, log)
        self.procs.append(proc)
        return proc

    def start_jobmanager(self, jm_id: str, port: int | None = None) -> Proc:
        port = free_port() if port is None else port
        argv = self._argv("jobmanager", "--id", jm_id, **{"jobmanager.port": str(port)})
        proc = self._spawn("jobmanager", jm_id, argv)
        proc.address = f"http://127.0.0.1:{port}"
        return proc

    def start_taskmanager(self, tm_id: str, slots: int = 2) -> Proc:
        argv = self._argv(
            "taskmanager", "--id", tm_id, **{"taskmanager.numberOfTaskSlots": str(slots)}
        )
        return self._spawn("taskmanager", tm_id, argv)

    # ------------------------------------------------------------------ queries

    def jobmanagers(self) -> list[Proc]:
        return [p for p in self.procs if p.role == "jobmanager" and p.alive()]

    def client(self, timeout: float = 60.0) -> Client:
        return Client([p.address for p in self.jobmanagers()], timeout=timeout)

    def leader(self) -> Proc | None:
        """The live JobManager that says it leads and is ready (/readyz 200 as the leader)."""
        for proc in self.jobmanagers():
            answer = get_json(proc.address + "/readyz")
            if answer is not None and answer.get("role") == "leader":
                return proc
        return None

    def wait_ready(self, taskmanagers: int, timeout: float) -> Proc:
        def ready() -> Proc | None:
            self.check_alive()
            leader = self.leader()
            if leader is None:
                return None
            view = get_json(leader.address + "/v1/cluster") or {}
            return leader if len(view.get("taskmanagers", [])) >= taskmanagers else None

        return wait_until(ready, timeout, "Steward cluster ready", interval=0.1)

    def check_alive(self) -> None:
        for proc in self.procs:
            if not proc.signalled and not proc.alive():
                raise RuntimeError(
                    f"{proc.role} {proc.id} exited with {proc.popen.returncode}:\n"
                    + proc.log_tail()
                )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(0.1, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait(5)


# One keep-alive client for every poll: httpx.get() builds a client (and an SSL context) per
# call, which costs tens to hundreds of milliseconds on a loaded machine and would be counted
# as failover time.
_HTTP = httpx.Client(timeout=2.0)


def get_json(url: str, timeout: float = 2.0) -> Any:
    """The JSON answer of a 200 GET, else None (refused, timed out, 503, not JSON)."""
    try:
        response = _HTTP.get(url, timeout=timeout)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None
