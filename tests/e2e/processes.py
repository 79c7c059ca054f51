"""A Steward cluster made of real processes, for end-to-end tests.

JobManagers and TaskManagers run as ``python -m steward.cli ... jobmanager|taskmanager``
against the session's real ZooKeeper (a fresh namespace per test), each in its own process
group, logging to a file under the test's tmp_path. Tests kill them with real signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from steward.client import Client
from support import ZK_TEST_ROOT, free_port, wait_until


@dataclass
class Proc:
    role: str
    id: str
    popen: subprocess.Popen[bytes]
    log: Path
    address: str = ""
    signalled: bool = False
    """The test sent it a signal: its death is expected."""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        self.signalled = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, signum)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class ProcessCluster:
    def __init__(
        self,
        workdir: Path,
        quorum: str,
        cluster_id: str,
        *,
        session_timeout: str = "4s",
        heartbeat: str = "200ms",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.settings = {
            "high-availability.zookeeper.quorum": quorum,
            "high-availability.zookeeper.root": ZK_TEST_ROOT,
            "high-availability.cluster-id": cluster_id,
            "high-availability.zookeeper.session-timeout": session_timeout,
            "high-availability.storage-dir": f"file://{workdir / 'storage'}",
            "taskmanager.workdir": str(workdir / "work"),
            "heartbeat.interval": heartbeat,
            "jobmanager.replacement-grace": "500ms",
            **(extra or {}),
        }
        self.procs: list[Proc] = []

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

    def start_jobmanager(self, jm_id: str) -> Proc:
        port = free_port()
        argv = self._argv("-v", "jobmanager", "--id", jm_id, **{"jobmanager.port": str(port)})
        proc = self._spawn("jobmanager", jm_id, argv)
        proc.address = f"http://127.0.0.1:{port}"
        return proc

    def start_taskmanager(self, tm_id: str, slots: int = 2, *, quorum: str | None = None) -> Proc:
        """``quorum`` overrides the ZooKeeper connect string for this TaskManager alone (a
        test can keep it off a server it is about to break)."""
        overrides = {"taskmanager.numberOfTaskSlots": str(slots)}
        if quorum is not None:
            overrides["high-availability.zookeeper.quorum"] = quorum
        argv = self._argv("-v", "taskmanager", "--id", tm_id, **overrides)
        return self._spawn("taskmanager", tm_id, argv)

    # ------------------------------------------------------------------ queries

    def jobmanagers(self) -> list[Proc]:
        return [p for p in self.procs if p.role == "jobmanager"]

    def client(self, timeout: float = 30.0) -> Client:
        return Client([p.address for p in self.jobmanagers()], timeout=timeout)

    def get(self, proc: Proc, path: str) -> Any:
        return httpx.get(proc.address + path, timeout=5).json()

    def cluster_view(self) -> dict[str, Any] | None:
        for proc in self.jobmanagers():
            if not proc.alive():
                continue
            with contextlib.suppress(httpx.HTTPError, ValueError):
                return self.get(proc, "/v1/cluster")  # type: ignore[no-any-return]
        return None

    def leader(self) -> Proc | None:
        view = self.cluster_view()
        if not view or not view.get("leader"):
            return None
        leader_id = view["leader"]["id"]
        return next((p for p in self.jobmanagers() if p.id == leader_id and p.alive()), None)

    def wait_ready(self, taskmanagers: int, timeout: float = 60.0) -> Proc:
        """Wait for a recovered leader that sees ``taskmanagers`` TaskManagers."""

        def ready() -> Proc | None:
            self.check_alive()
            leader = self.leader()
            if leader is None:
                return None
            try:
                if httpx.get(leader.address + "/readyz", timeout=2).status_code != 200:
                    return None
                view = self.get(leader, "/v1/cluster")
            except httpx.HTTPError:
                return None
            return leader if len(view["taskmanagers"]) >= taskmanagers else None

        return wait_until(ready, timeout, interval=0.1, message="cluster ready")

    def check_alive(self) -> None:
        """Fail with the process's log if a process died that the test did not signal."""
        for proc in self.procs:
            if not proc.signalled and not proc.alive():
                raise AssertionError(
                    f"{proc.role} {proc.id} exited with {proc.popen.returncode}:\n"
                    + proc.log_text()[-4000:]
                )

    def forget_stopped(self) -> None:
        """Drop the records of processes that have exited (after :meth:`stop`, say), so the
        same namespace and storage can host a fresh set of processes ("restart the cluster")."""
        self.procs = [proc for proc in self.procs if proc.alive()]

    def stop(self) -> None:
        for proc in self.procs:
            proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(0.1, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.popen.wait(5)
