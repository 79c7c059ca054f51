"""A Steward cluster made of real processes: the one way tests, the chaos suite and benchmarks
start JobManagers and TaskManagers.

Each process runs ``python -m steward.cli -D key=value ... [-v] jobmanager|taskmanager --id
<id>`` against a given ZooKeeper (one namespace per cluster id), in a process group of its own,
its output appended to ``<workdir>/logs/<id>.log``. Callers kill members with real signals
(:meth:`Proc.signal`); :meth:`ProcessCluster.check_alive` fails with the log of any member
that died without being signalled; :meth:`ProcessCluster.stop` ends them all.

Like ``steward cluster start``, a cluster protects its ZooKeeper state with a credential of
its own (``<workdir>/zookeeper.digest``, mode 0600; :mod:`steward.ha.acl`): a test that reads
the state directly passes ``cluster.zookeeper_access.kazoo_options()`` to its kazoo client.
And like it, a cluster has an internal credential (``<workdir>/internal.token``) and an admin
token (the test process's own, :mod:`steward.testing.credentials`, exported as
``$STEWARD_TOKEN``): :meth:`ProcessCluster.client` and every ``steward.Client`` a test builds
carry it; a raw request passes ``headers=cluster.headers``.

The product's ``steward cluster start`` (:mod:`steward.cluster.local`) records and supervises
its processes differently (a state file, detached sessions, pids checked against their create
time) and is not built on this kit; what they share is the port choice
(:func:`steward.testing.ports.stable_port`, the launcher's own).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import httpx
import psutil

from steward.client import Client
from steward.config import Configuration
from steward.config.configuration import validate
from steward.ha.acl import (
    ACL_KEY,
    DIGEST_FILE_KEY,
    DIGEST_FILE_NAME,
    OPEN,
    AclMode,
    DigestCredential,
    ZooKeeperAccess,
    create_digest_file,
)
from steward.ha.session import Session
from steward.security.credentials import INTERNAL_KEY
from steward.security.provision import register
from steward.testing.credentials import (
    auth_headers,
    export_admin_token,
    internal_token_file,
    kit_admin_token,
)
from steward.testing.ports import stable_port
from steward.testing.spawning import spawn_logged
from steward.testing.waiting import wait_until
from steward.tls.contexts import ClientTls, client_tls
from steward.tls.contexts import scheme as tls_scheme
from steward.zookeeper.layout import LOOPBACK

TEST_ROOT = "/steward-tests"
"""The ZooKeeper root of test clusters: a test's nodes live under ``TEST_ROOT/<cluster id>``."""

FAST_TIMING: Mapping[str, str] = {
    "heartbeat.interval": "200ms",
    "jobmanager.replacement-grace": "500ms",
}
"""The settings tests add so that heartbeats and replacements take a fraction of a second."""

AUTH_KEY = "security.auth.enabled"
ROOT_KEY = "high-availability.zookeeper.root"
CLUSTER_ID_KEY = "high-availability.cluster-id"

STOP_GRACE = 15.0
"""How long :meth:`ProcessCluster.stop` waits after SIGTERM before it SIGKILLs."""
_REAP_TIMEOUT = 5.0
_LOG_TAIL = 4000


@dataclass
class Proc:
    """One Steward process a cluster started."""

    role: str
    id: str
    popen: subprocess.Popen[bytes]
    log: Path
    address: str = ""
    """A JobManager's REST address (``http://host:port``); empty for a TaskManager."""
    signalled: bool = False
    """The caller sent it a signal: its death is expected."""

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

    def log_tail(self, chars: int = _LOG_TAIL) -> str:
        return self.log_text()[-chars:]

    def rss_bytes(self, children: bool = False) -> int:
        """Resident memory of the process (plus its descendants' if ``children``)."""
        process = psutil.Process(self.pid)
        total = int(process.memory_info().rss)
        if children:
            for child in process.children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += int(child.memory_info().rss)
        return total


def cluster_settings(
    workdir: Path, quorum: str, cluster_id: str, *, root: str, session_timeout: str
) -> dict[str, str]:
    """The settings every member of a cluster in ``workdir`` gets: its ZooKeeper namespace and
    credential (``workdir/zookeeper.digest``, made if missing), its storage (``workdir/storage``)
    and its TaskManagers' work folder (``workdir/work``)."""
    digest_file = workdir / DIGEST_FILE_NAME
    create_digest_file(digest_file)
    return {
        "high-availability.zookeeper.quorum": quorum,
        DIGEST_FILE_KEY: str(digest_file),
        "high-availability.zookeeper.root": root,
        "high-availability.cluster-id": cluster_id,
        "high-availability.zookeeper.session-timeout": session_timeout,
        "high-availability.storage-dir": f"file://{workdir / 'storage'}",
        "taskmanager.workdir": str(workdir / "work"),
        INTERNAL_KEY: str(internal_token_file(workdir)),
    }


class ProcessCluster:
    """JobManagers and TaskManagers in one namespace of one ZooKeeper, all started by us.

    ``settings`` (edit it before starting processes, if need be) is passed to every member as
    ``-D`` options: :func:`cluster_settings`, then ``timing`` (:data:`FAST_TIMING` unless
    given), then ``extra``. ``verbose`` runs the members with ``-v`` (INFO logs). As a context
    manager, every member is stopped at the end of the block::

        with ProcessCluster(workdir, quorum, "c1") as cluster:
            cluster.start_one_of_each()
            ...
    """

    death_error: type[Exception] = AssertionError
    """What :meth:`check_alive` raises."""

    def __init__(
        self,
        workdir: Path,
        quorum: str,
        cluster_id: str,
        *,
        root: str = TEST_ROOT,
        session_timeout: str = "4s",
        timing: Mapping[str, str] = FAST_TIMING,
        extra: Mapping[str, str] | None = None,
        verbose: bool = True,
    ) -> None:
        self.workdir = workdir
        self.settings = {
            **cluster_settings(
                workdir, quorum, cluster_id, root=root, session_timeout=session_timeout
            ),
            **timing,
            **(extra or {}),
        }
        self.verbose = verbose
        self.procs: list[Proc] = []
        self._admin_registered = False
        export_admin_token()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def zookeeper_access(self) -> ZooKeeperAccess:
        """The access of this cluster's members (its credential, unless settings say open)."""
        digest_file = self.settings.get(DIGEST_FILE_KEY)
        if self.settings.get(ACL_KEY) == AclMode.OPEN or not digest_file:
            return OPEN
        return ZooKeeperAccess(AclMode.CREATOR, DigestCredential.read(Path(digest_file)))

    def register_admin_token(self) -> None:
        """The kit's admin token (steward.testing.credentials), registered in this cluster's
        namespace once, as ``steward cluster start`` registers its own; nothing with auth off."""
        if self._admin_registered or self.settings.get(AUTH_KEY, "true").lower() == "false":
            return
        root = f"{self.settings[ROOT_KEY]}/{self.settings[CLUSTER_ID_KEY]}"
        quorum = self.settings["high-availability.zookeeper.quorum"]
        with Session(quorum, root, access=self.zookeeper_access, name="kit-credentials") as zk:
            register(zk, kit_admin_token())
        self._admin_registered = True

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization`` with the kit's admin token, for a test's raw requests."""
        return auth_headers()

    # ------------------------------------------------------------------ processes

    def command(
        self, role: str, proc_id: str, overrides: Mapping[str, str] | None = None
    ) -> list[str]:
        """The argv of member ``proc_id`` of ``role``: the settings, then ``overrides``."""
        argv = [sys.executable, "-m", "steward.cli"]
        for key, value in {**self.settings, **(overrides or {})}.items():
            argv += ["-D", f"{key}={value}"]
        return [*argv, *(["-v"] if self.verbose else []), role, "--id", proc_id]

    def spawn(self, role: str, proc_id: str, argv: list[str]) -> Proc:
        """Start ``argv`` in a process group of its own, its output appended to the log of
        ``proc_id``, and record it."""
        log = self.workdir / "logs" / f"{proc_id}.log"
        proc = Proc(role, proc_id, spawn_logged(argv, log, cwd=self.workdir), log)
        self.procs.append(proc)
        return proc

    def start_jobmanager(self, jm_id: str, port: int | None = None) -> Proc:
        """Start a JobManager serving REST on ``port`` (a free one if None)."""
        self.register_admin_token()
        port = stable_port() if port is None else port
        argv = self.command("jobmanager", jm_id, {"jobmanager.port": str(port)})
        proc = self.spawn("jobmanager", jm_id, argv)
        proc.address = f"{tls_scheme(self.rest_config().settings.tls)}://{LOOPBACK}:{port}"
        return proc

    def start_taskmanager(
        self,
        tm_id: str,
        slots: int = 2,
        *,
        quorum: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> Proc:
        """Start a TaskManager with ``slots`` slots. ``quorum`` overrides the ZooKeeper connect
        string for this TaskManager alone (a test can keep it off a server it is about to
        break); ``settings`` are further settings of its own."""
        overrides = {"taskmanager.numberOfTaskSlots": str(slots), **(settings or {})}
        if quorum is not None:
            overrides["high-availability.zookeeper.quorum"] = quorum
        return self.spawn("taskmanager", tm_id, self.command("taskmanager", tm_id, overrides))

    def jobmanagers(self) -> list[Proc]:
        """Every JobManager started, dead or alive."""
        return [p for p in self.procs if p.role == "jobmanager"]

    def start_one_of_each(self, slots: int = 2) -> None:
        """Start JobManager jm-1 and TaskManager tm-1 (``slots`` slots); return once jm-1
        leads, ready, with tm-1 registered."""
        self.start_jobmanager("jm-1")
        self.start_taskmanager("tm-1", slots)
        self.wait_ready(taskmanagers=1)

    def check_alive(self) -> None:
        """Fail with the process's log if a process died that nobody signalled."""
        for proc in self.procs:
            if not proc.signalled and not proc.alive():
                raise self.death_error(
                    f"{proc.role} {proc.id} exited with {proc.popen.returncode}:\n"
                    + proc.log_tail()
                )

    def forget_stopped(self) -> None:
        """Drop the records of processes that have exited (after :meth:`stop`, say), so the
        same namespace and storage can host a fresh set of processes ("restart the cluster")."""
        self.procs = [proc for proc in self.procs if proc.alive()]

    def stop(self) -> None:
        """SIGTERM every live member (and SIGCONT: a frozen one must run to see it), SIGKILL
        the process group of each after :data:`STOP_GRACE`, and reap them."""
        for proc in self.procs:
            if proc.alive():
                proc.signal(signal.SIGTERM)
                proc.signal(signal.SIGCONT)
        deadline = time.monotonic() + STOP_GRACE
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(0.1, deadline - time.monotonic()))
        for proc in self.procs:
            # Whatever is left in a member's process group goes with it (attempts run in
            # groups of their own: a caller that must end those too kills them itself).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(_REAP_TIMEOUT)

    # ------------------------------------------------------------------ REST

    def rest_config(self) -> Configuration:
        """The members' ``rest.*`` settings (``rest.ssl.*``: TLS) as a configuration."""
        rest = {key: value for key, value in self.settings.items() if key.startswith("rest.")}
        return validate(rest, dict.fromkeys(rest, "ProcessCluster.settings"))

    @property
    def tls(self) -> ClientTls:
        """How the kit verifies its JobManagers: ``rest.ssl.ca`` of :attr:`settings`."""
        return client_tls(self.rest_config().settings.tls)

    def client(self, timeout: float = 30.0) -> Client:
        """A ``steward.Client`` over the JobManagers' addresses."""
        addresses = [p.address for p in self.jobmanagers()]
        return Client(
            addresses, timeout=timeout, config=self.rest_config(), token=kit_admin_token()
        )

    def answer(self, proc: Proc, path: str) -> httpx.Response:
        """What ``proc`` answers to a GET of ``path``, as the kit's admin."""
        return httpx.get(
            proc.address + path, timeout=5, verify=self.tls.context, headers=self.headers
        )

    def get(self, proc: Proc, path: str) -> Any:
        """The JSON ``proc`` answers at ``path`` (an error's body too)."""
        return self.answer(proc, path).json()

    def cluster_view(self) -> dict[str, Any] | None:
        """``/v1/cluster`` of the first live JobManager that answers, else None."""
        for proc in self.jobmanagers():
            if not proc.alive():
                continue
            with contextlib.suppress(httpx.HTTPError, ValueError):
                answer = self.answer(proc, "/v1/cluster")
                if answer.status_code == 200:  # not a 503 while ZooKeeper moves servers
                    view: dict[str, Any] = answer.json()
                    return view
        return None

    def leader(self) -> Proc | None:
        """The live JobManager the cluster names its leader, if any."""
        view = self.cluster_view()
        if not view or not view.get("leader"):
            return None
        leader_id = view["leader"]["id"]
        return next((p for p in self.jobmanagers() if p.id == leader_id and p.alive()), None)

    def is_ready(self, proc: Proc) -> bool:
        """``proc`` answers ``/readyz`` 200: a recovered leader, or a standby that could take
        over a crash of the leader at once (in line, the leader seen alive)."""
        try:
            answer = httpx.get(proc.address + "/readyz", timeout=2, verify=self.tls.context)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def wait_all_ready(self, timeout: float = 60.0) -> None:
        """Wait until every live JobManager is ready (:meth:`is_ready`): a test may then kill
        the leader and expect a standby to take over without the session timeout."""

        def ready() -> bool:
            self.check_alive()
            return all(self.is_ready(p) for p in self.jobmanagers() if p.alive())

        wait_until(ready, timeout, "every JobManager ready", interval=0.02)

    def wait_ready(self, taskmanagers: int, timeout: float = 60.0) -> Proc:
        """Wait for a recovered leader that sees ``taskmanagers`` TaskManagers."""

        def ready() -> Proc | None:
            self.check_alive()
            leader = self.leader()
            if leader is None:
                return None
            try:
                readyz = httpx.get(leader.address + "/readyz", timeout=2, verify=self.tls.context)
                if readyz.status_code != 200:
                    return None
                cluster = self.answer(leader, "/v1/cluster")
            except httpx.HTTPError:
                return None
            if cluster.status_code != 200:
                return None  # e.g. 503: the leader's ZooKeeper connection is moving servers
            return leader if len(cluster.json()["taskmanagers"]) >= taskmanagers else None

        return wait_until(ready, timeout, "cluster ready", interval=0.1)
