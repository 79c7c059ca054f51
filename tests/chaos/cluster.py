"""The cluster under test: a 3-server ZooKeeper ensemble, JobManagers and TaskManagers as real
processes, and the storage directory the nemesis can make read-only.

Built on the testing kit (``steward.testing.processes.ProcessCluster``; the ensemble is
``steward.testing.zookeeper.start_ensemble``); what chaos adds is restarting a killed
member under its old id and port (so clients keep working and the cluster keeps its size),
and telling expected deaths (the nemesis killed it) from crashes.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from chaos.hosts import JM_PORT, Hosts
from steward.testing.processes import Proc, ProcessCluster
from steward.testing.spawning import spawn_logged

# A thread that died of an uncaught exception: always a bug, even if the process lives on.
_THREAD_DEATH = re.compile(r"^Exception in thread (.*)$", re.MULTILINE)
# A request the REST API let an exception escape from (uvicorn answers 500): a bug too.
_UNHANDLED_REQUEST = re.compile(r"^ERROR:\s+Exception in ASGI application$", re.MULTILINE)


class ChaosCluster(ProcessCluster):
    """A ProcessCluster whose members can be restarted as themselves.

    With ``hosts`` (``campaign --network``) each member runs in a network namespace of its
    own: a JobManager listens on its host's address, and a restart (the same argv, so the
    same ``ip netns exec``) is the same host.
    """

    hosts: Hosts | None = None
    environment: dict[str, str] = {}  # noqa: RUF012 (replaced, never changed in place)
    """Variables every member gets on top of ours (the S3 server's, a test fault point's)."""

    def spawn(self, role: str, proc_id: str, argv: list[str]) -> Proc:
        if not self.environment:
            return super().spawn(role, proc_id, argv)
        log = self.workdir / "logs" / f"{proc_id}.log"
        environ = {**os.environ, **self.environment}
        proc = Proc(role, proc_id, spawn_logged(argv, log, cwd=self.workdir, env=environ), log)
        self.procs.append(proc)
        return proc

    def start_jobmanager(self, jm_id: str, port: int | None = None) -> Proc:
        if self.hosts is None:
            return super().start_jobmanager(jm_id, port)
        self.register_admin_token()
        address = self.hosts.add(jm_id)
        argv = self.command(
            "jobmanager",
            jm_id,
            {
                "jobmanager.port": str(JM_PORT),
                "jobmanager.bind-host": address,
                "jobmanager.advertised-address": f"http://{address}:{JM_PORT}",
            },
        )
        proc = self.spawn("jobmanager", jm_id, [*self.hosts.prefix(jm_id), *argv])
        proc.address = f"http://{address}:{JM_PORT}"
        return proc

    def start_taskmanager(
        self,
        tm_id: str,
        slots: int = 2,
        *,
        quorum: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> Proc:
        if self.hosts is None:
            return super().start_taskmanager(tm_id, slots, quorum=quorum, settings=settings)
        address = self.hosts.add(tm_id)
        overrides = {
            "taskmanager.numberOfTaskSlots": str(slots),
            "taskmanager.bind-host": address,
            **(settings or {}),
        }
        argv = self.command("taskmanager", tm_id, overrides)
        return self.spawn("taskmanager", tm_id, [*self.hosts.prefix(tm_id), *argv])

    def restart(self, old: Proc) -> Proc:
        """Start ``old`` again: same role, id, arguments (so the same REST port)."""
        proc = self.spawn(old.role, old.id, [str(arg) for arg in old.popen.args])  # type: ignore[union-attr]
        proc.address = old.address
        return proc

    def current(self, role: str) -> list[Proc]:
        """The newest process of every member of ``role``."""
        newest: dict[str, Proc] = {}
        for proc in self.procs:
            if proc.role == role:
                newest[proc.id] = proc
        return list(newest.values())

    def member(self, member_id: str) -> Proc:
        return next(p for p in reversed(self.procs) if p.id == member_id)

    def readyz(self, proc: Proc, timeout: float = 1.0) -> dict[str, Any] | None:
        """The member's /readyz answer if it is ready, else None."""
        try:
            response = httpx.get(proc.address + "/readyz", timeout=timeout)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        with contextlib.suppress(ValueError):
            body: dict[str, Any] = response.json()
            return body
        return None

    def ready_leader(self, exclude: str | None = None) -> str | None:
        """The id of a JobManager that answers /readyz as the leader (not ``exclude``)."""
        for proc in self.current("jobmanager"):
            if proc.id == exclude or not proc.alive():
                continue
            body = self.readyz(proc)
            if body and body.get("role") == "leader":
                return str(body.get("id"))
        return None

    def failures(self, *, scan_logs: bool = True) -> list[dict[str, Any]]:
        """Crashes: processes that exited though nobody signalled them, and (``scan_logs``)
        threads that died of an uncaught exception."""
        found: list[dict[str, Any]] = []
        for proc in self.procs:
            if not proc.signalled and not proc.alive():
                found.append(
                    {
                        "process": f"{proc.role} {proc.id}",
                        "exit_code": proc.popen.returncode,
                        "log_tail": proc.log_text()[-2000:],
                    }
                )
        if not scan_logs:
            return found
        seen_logs: set[Path] = set()
        for proc in self.procs:
            if proc.log in seen_logs:
                continue
            seen_logs.add(proc.log)
            text = proc.log_text()
            for match in _THREAD_DEATH.finditer(text):
                found.append(
                    {
                        "process": f"{proc.role} {proc.id}",
                        "thread_died": match.group(1),
                        "log_excerpt": text[match.start() : match.start() + 1500],
                    }
                )
            for match in _UNHANDLED_REQUEST.finditer(text):
                found.append(
                    {
                        "process": f"{proc.role} {proc.id}",
                        "unhandled_request_error": True,
                        "log_excerpt": text[match.start() : match.start() + 3000],
                    }
                )
        return found

    def traceback_count(self) -> int:
        logs = {proc.log for proc in self.procs}
        return sum(
            path.read_text(errors="replace").count("Traceback") for path in logs if path.exists()
        )

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM everything (SIGKILL stragglers); exit codes of the members never killed."""
        spared = [p for p in self.procs if not p.signalled]
        self.stop()
        return {f"{p.role} {p.id} pid {p.pid}": p.popen.returncode for p in spared}


class StorageFreezer:
    """Makes the storage directory read-only with a read-only bind mount over itself.

    chmod would not stop root; a bind mount does (EROFS for every writer).

    With ``--network`` every member runs under ``ip netns exec``, which gives it a mount
    namespace of its own (a copy of this one, a slave of its shared mounts): a mount made here
    reaches it only by propagation from a shared mount, and a remount's read-only flag never
    propagates. So :meth:`prepare` makes the directory a shared mount of its own before any
    member starts, and :meth:`freeze` makes the read-only mount on a private staging point
    first and binds that over the directory: it propagates read-only, and its unmount too.
    (The first version bound the directory over itself and remounted it read-only here
    alone: members on hosts of their own never saw the fault, and one started during it kept
    a read-only copy for good.)
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stage = path.parent / f".{path.name}-readonly"
        self.prepared = False
        self.mounted = False

    def prepare(self) -> None:
        """Make the directory a shared mount of its own; before any member starts."""
        self.path.mkdir(parents=True, exist_ok=True)
        if mounts_at(self.path) == 0:
            _run(["mount", "--bind", str(self.path), str(self.path)])
        self.prepared = True
        _run(["mount", "--make-shared", str(self.path)])

    def available(self) -> str | None:
        """None if the mounts work here (and the directory is prepared), else why not."""
        try:
            self.prepare()
            self.freeze()
        except (OSError, subprocess.CalledProcessError) as exc:
            return f"read-only bind mount failed: {exc}"
        finally:
            self.thaw()
        return None

    def freeze(self) -> None:
        if self.mounted:
            return
        if not self.prepared:
            self.prepare()
        self._stage.mkdir(exist_ok=True)
        _run(["mount", "--bind", str(self.path), str(self._stage)])
        try:
            _run(["mount", "--make-private", str(self._stage)])
            _run(["mount", "-o", "remount,ro,bind", str(self._stage)])
            self.mounted = True
            _run(["mount", "--bind", str(self._stage), str(self.path)])
        finally:
            _run(["umount", str(self._stage)])

    def thaw(self) -> None:
        """Undo :meth:`freeze`; a mount already gone (an interrupted thaw did it) is fine."""
        if self.mounted:
            if mounts_at(self.path) > (1 if self.prepared else 0):
                _run(["umount", str(self.path)])
            self.mounted = False

    def release(self) -> None:
        """:meth:`thaw`, and take the shared mount away too (the campaign is over)."""
        try:
            self.thaw()
        finally:
            while self.prepared and mounts_at(self.path) > 0:
                _run(["umount", "-l", str(self.path)])
            self.prepared = False


def mounts_at(path: Path) -> int:
    """How many mounts are stacked on ``path`` in this process's mount namespace.

    Not ``os.path.ismount``: it compares device numbers with the parent's, and a bind mount
    of a directory onto itself has the same device, so it would always say no (and each
    freeze would stack a read-only mount on the last, never undone).
    """
    target = os.path.realpath(path)
    count = 0
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        for line in mounts:
            # Field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            count += point == target
    return count


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)
