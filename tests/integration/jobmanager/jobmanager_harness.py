"""Harness of the JobManager integration tests: in-process JobManagers on a real ZooKeeper.

- :class:`JobManagerCluster` (the ``cluster`` fixture) builds the configuration of one test's
  Steward cluster (its own ZooKeeper namespace, storage and work dirs under ``tmp_path``, any
  free port, short timings), starts :class:`~steward.jobmanager.manager.JobManager` objects in
  this process and stops them after the test; it also has a kazoo client of its own to look
  at (and tamper with) the cluster's znodes, and small REST helpers.
- :class:`PretendTaskManager` registers ``taskmanagers/<id>`` on a ZooKeeper session of its
  own and speaks the heartbeat protocol (:mod:`steward.wire.heartbeat`) by hand, so the leader's
  side of it can be driven step by step without a real TaskManager.

Import as ``from jobmanager_harness import ...`` from tests in this folder.
"""

from __future__ import annotations

import base64
import contextlib
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import httpx
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.retry import KazooRetry

from steward.config import Configuration, load
from steward.ha.layout import Layout
from steward.jobmanager.leader.dispatcher import Dispatcher
from steward.jobmanager.manager import JobManager
from steward.security.credentials import read_secret
from steward.security.provision import admin_record
from steward.testing.credentials import (
    auth_headers,
    export_admin_token,
    internal_token_file,
    kit_admin_token,
)
from steward.wire.heartbeat import (
    HEARTBEAT_PATH,
    AttemptReport,
    CancelAttempt,
    Heartbeat,
    HeartbeatReply,
    Rejection,
    StartAttempt,
)
from steward.wire.records import ContenderInfo, ExecutionLease, TaskManagerInfo
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from support import ZK_TEST_ROOT, wait_until

SESSION_TIMEOUT = "8s"
"""The JobManagers here run in the test's own process: each fences itself once no ZooKeeper
round trip has worked for 0.6 of this (rule 4). At 4 s (2.4 s) a test process starved on a
loaded machine (load 15) fenced its leader in the middle of a test; no test here waits for a
session to expire (the directory ran in 97 s at 8 s against 111 s at 4 s, -n 2)."""
CLIENT_SESSION_SECONDS = 8.0
"""The session of the test's own kazoo clients (the harness's, a fake TaskManager's, a latch
squatter's), in the same starved process: at 4 s one expired on a loaded machine (two test runs
at once, load 18) before the test's first write. No test waits for one to expire."""
HEARTBEAT_INTERVAL = 0.2
REPLACEMENT_GRACE = 0.5
START_TIMEOUT = 10.0
"""Seconds for a JobManager to be granted leadership and recover (generous for a busy box)."""
SETTLE = 10.0
"""Seconds for anything the leader does on its own (scheduling, cleanup) to show."""

PIPELINE = b"def main(ctx):\n    return {'rows': 3}\n"
"""A pipeline without a hook: the leader starts no child process for it."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def submission(
    job_id: str | None,
    source: bytes = PIPELINE,
    filename: str = "stw_test_pipeline.py",
    **spec: Any,
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/jobs``."""
    fields: dict[str, Any] = dict(spec)
    if job_id is not None:
        fields["job_id"] = job_id
    return {"spec": fields, "artifact": {"filename": filename, "data_b64": b64(source)}}


class JobManagerCluster:
    """One test's Steward cluster: configuration, JobManagers, a ZooKeeper client, REST;
    closed (every JobManager and client stopped) at the end of a ``with`` block."""

    def __init__(self, quorum: str, cluster_id: str, tmp_path: Path) -> None:
        self.quorum = quorum
        self.cluster_id = cluster_id
        self.root = f"{ZK_TEST_ROOT}/{cluster_id}"
        self.layout = Layout(self.root)
        self.tmp_path = tmp_path
        self.storage = tmp_path / "storage"
        self.workdir = tmp_path / "work"
        # A configuration file of its own: nothing from the working directory leaks in. Its
        # one setting: world-open ZooKeeper state, which the harness's own kazoo clients
        # read and write (the ACLs are tested with the testing kit's processes).
        self._config_file = tmp_path / "steward.toml"
        self._config_file.write_text('"high-availability.zookeeper.client.acl" = "open"\n')
        self.managers: list[JobManager] = []
        # Requests as the cluster's admin (steward.testing.credentials); a pretend
        # TaskManager's heartbeats send the internal credential instead.
        self.http = httpx.Client(timeout=15.0, headers=auth_headers())
        export_admin_token()  # and any steward.Client a test builds
        self.internal_token_file = internal_token_file(tmp_path)
        self.zk = KazooClient(hosts=quorum, timeout=CLIENT_SESSION_SECONDS)
        self.zk.start(timeout=15)
        self.zk.ensure_path(self.root)
        admin = admin_record(kit_admin_token())
        self.zk.create(self.layout.auth_token(admin.id), admin.to_json(), makepath=True)
        self._closers: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ configuration

    def config(self, **overrides: object) -> Configuration:
        values: dict[str, object] = {
            "high-availability.zookeeper.quorum": self.quorum,
            "high-availability.zookeeper.root": ZK_TEST_ROOT,
            "high-availability.cluster-id": self.cluster_id,
            "high-availability.zookeeper.session-timeout": SESSION_TIMEOUT,
            "high-availability.storage-dir": f"file://{self.storage}",
            "taskmanager.workdir": str(self.workdir),
            "jobmanager.port": 0,
            "heartbeat.interval": f"{int(HEARTBEAT_INTERVAL * 1000)}ms",
            "jobmanager.replacement-grace": f"{int(REPLACEMENT_GRACE * 1000)}ms",
            "jobmanager.initialize-timeout": "30s",
            "jobmanager.cancel-grace": "1s",
            "security.internal.token-file": str(self.internal_token_file),
        }
        values.update(overrides)
        return load(config_file=self._config_file, environ={}, overrides=values)

    # ------------------------------------------------------------------ JobManagers

    def start(self, jm_id: str, **overrides: object) -> JobManager:
        manager = JobManager(self.config(**overrides), jm_id)
        self.managers.append(manager)
        return manager.start()

    def start_leader(self, jm_id: str = "jm-1", **overrides: object) -> JobManager:
        """Start a JobManager and wait until it leads and has recovered."""
        manager = self.start(jm_id, **overrides)
        self.wait_leading(manager)
        return manager

    def wait_leading(self, manager: JobManager, timeout: float = START_TIMEOUT) -> None:
        def leading() -> bool:
            dispatcher = manager.dispatcher
            return dispatcher is not None and dispatcher.ready and leader_id(manager) == manager.id

        wait_until(leading, timeout, message=f"{manager.id} leads and has recovered")

    def wait_knows_leader(self, manager: JobManager, leader: JobManager) -> None:
        wait_until(
            lambda: leader_id(manager) == leader.id,
            START_TIMEOUT,
            message=f"{manager.id} knows {leader.id} leads",
        )

    def fake_latch_holder(self) -> KazooClient:
        """A contender first in line that never leads: it never publishes ``leader/info``.

        Close the returned client to let the next contender lead.
        """
        client = KazooClient(hosts=self.quorum, timeout=CLIENT_SESSION_SECONDS)
        client.start(timeout=15)
        self._closers.append(lambda: _close(client))
        client.ensure_path(self.layout.leader_latch)
        client.create(
            f"{self.layout.leader_latch}/latch-",
            ContenderInfo(contender="jm-squatter", address="http://127.0.0.1:9").to_json(),
            ephemeral=True,
            sequence=True,
        )
        return client

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for manager in reversed(self.managers):
            with contextlib.suppress(Exception):
                manager.stop()
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                closer()
        self.http.close()
        _close(self.zk)

    @property
    def internal_credential(self) -> str:
        """The cluster's internal credential: what its TaskManagers heartbeat with."""
        return read_secret(self.internal_token_file, "security.internal.token-file")

    # ------------------------------------------------------------------ ZooKeeper

    def exists(self, path: str) -> bool:
        return self.zk.exists(path) is not None

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self.zk.get_children(path))
        except NoNodeError:
            return []

    def data(self, path: str) -> bytes | None:
        """The znode's data, or None. A read rides out this observer's own reconnect: a test
        that stops the ZooKeeper server can outlast its session on a loaded machine."""
        retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=30.0)
        try:
            value, _stat = retry(self.zk.get, path)
        except NoNodeError:
            return None
        return bytes(value)

    def blob_files(self) -> list[Path]:
        if not self.storage.exists():
            return []
        return sorted(p for p in self.storage.rglob("*") if p.is_file())

    # ------------------------------------------------------------------ REST

    def url(self, manager: JobManager, path: str) -> str:
        return manager.address.rstrip("/") + path

    def get(self, manager: JobManager, path: str) -> httpx.Response:
        return self.http.get(self.url(manager, path))

    def post(self, manager: JobManager, path: str, body: Any = None) -> httpx.Response:
        if body is None:
            return self.http.post(self.url(manager, path))
        return self.http.post(self.url(manager, path), json=body)

    def submit(self, manager: JobManager, job_id: str | None, **kwargs: Any) -> httpx.Response:
        return self.post(manager, "/v1/jobs", submission(job_id, **kwargs))

    def submitted(self, manager: JobManager, job_id: str, **kwargs: Any) -> dict[str, Any]:
        """``job_id`` submitted, sent again after a 503 as every client does (under load the
        leader's ZooKeeper connection may move to another server for a moment, and a write
        then is answered 503 unsent; the same body again is the same submission)."""

        def answered() -> httpx.Response | None:
            response = self.submit(manager, job_id, **kwargs)
            return None if response.status_code == 503 else response

        response = wait_until(answered, 30, interval=0.2, message=f"{job_id} submitted")
        assert response.status_code == 201, response.text
        view: dict[str, Any] = response.json()
        return view

    def job(self, manager: JobManager, job_id: str) -> dict[str, Any]:
        response = self.get(manager, f"/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        view: dict[str, Any] = response.json()
        return view

    def wait_state(
        self,
        manager: JobManager,
        job_id: str,
        state: str,
        timeout: float = SETTLE,
        *,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """The job's view once it is in ``state`` (and, if given, says ``reason``: a waiting
        job's first record says it waits for a slot, the scheduler's pass then says why)."""
        seen: list[str] = []

        def reached() -> dict[str, Any] | None:
            view = self.job(manager, job_id)
            seen.append(f"{view['state']}:{view.get('reason')}")
            matches = view["state"] == state and reason in (None, view.get("reason"))
            return view if matches else None

        try:
            return wait_until(reached, timeout, message=f"{job_id} is {state}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last seen {seen[-1:]}") from None

    def wait_result_clean(self, manager: JobManager, job_id: str) -> dict[str, Any]:
        def clean() -> dict[str, Any] | None:
            response = self.get(manager, f"/v1/jobs/{job_id}/result")
            if response.status_code != 200:
                return None
            result: dict[str, Any] = response.json()
            return result if result["cleanup"] == "CLEAN" else None

        return wait_until(clean, SETTLE, message=f"result of {job_id} is CLEAN")


def leader_id(manager: JobManager) -> str | None:
    """Who ``manager`` believes leads (from leader retrieval), or None."""
    info = manager.leader()
    return info.contender if info is not None else None


def dispatcher_of(manager: JobManager) -> Dispatcher:
    """The Dispatcher of a leading JobManager (its term's epoch, recovery summary, ...)."""
    dispatcher = manager.dispatcher
    assert dispatcher is not None, f"{manager.id} does not lead"
    return dispatcher


def _close(client: KazooClient) -> None:
    with contextlib.suppress(Exception):
        client.stop()
        client.close()


class PretendTaskManager:
    """A TaskManager played by the test: a registration znode and hand-made heartbeats."""

    def __init__(
        self, cluster: JobManagerCluster, tm_id: str, slots: int = 2, *, says_session: bool = True
    ) -> None:
        """``says_session``: its heartbeats name its ZooKeeper session (as TaskManagers do
        since the heartbeat's ``session`` field; False plays an older one)."""
        self.says_session = says_session
        self.cluster = cluster
        self.id = tm_id
        self.slots = slots
        self.address = f"http://{tm_id}.invalid:1"
        self.epoch = 0
        self.seq = 0
        self.zk = KazooClient(hosts=cluster.quorum, timeout=CLIENT_SESSION_SECONDS)
        self.zk.start(timeout=15)
        cluster._closers.append(lambda: _close(self.zk))
        self.path = cluster.layout.taskmanager(tm_id)

    def registration(self) -> bytes:
        return TaskManagerInfo(address=self.address, slots=self.slots).to_json()

    def register(self) -> PretendTaskManager:
        self.zk.ensure_path(self.cluster.layout.taskmanagers)
        self.zk.create(self.path, self.registration(), ephemeral=True)
        return self

    def unregister(self) -> None:
        """Its session's end, as the leader sees it: the registration znode is gone."""
        self.zk.delete(self.path)

    def beat(self, *reports: AttemptReport) -> Heartbeat:
        """The next heartbeat, numbered as a TaskManager's (each earlier one settled)."""
        self.seq += 1
        return Heartbeat(
            taskmanager=self.id,
            address=self.address,
            slots=self.slots,
            epoch=self.epoch,
            attempts=list(reports),
            session=self.zk.client_id[0] if self.says_session else None,
            seq=self.seq,
            settled=self.seq - 1,
        )

    def heartbeat_raw(
        self, leader: JobManager, *reports: AttemptReport, beat: Heartbeat | None = None
    ) -> httpx.Response:
        """Send ``beat`` (default: the next one, with ``reports``)."""
        beat = beat or self.beat(*reports)
        return self.cluster.http.post(
            self.cluster.url(leader, HEARTBEAT_PATH),
            content=beat.to_json(),
            headers={
                "content-type": "application/json",
                "authorization": f"Bearer {self.cluster.internal_credential}",
            },
        )

    def heartbeat(
        self, leader: JobManager, *reports: AttemptReport, beat: Heartbeat | None = None
    ) -> HeartbeatReply:
        response = self.heartbeat_raw(leader, *reports, beat=beat)
        assert response.status_code == 200, response.text
        reply = HeartbeatReply.from_json(response.content)
        self.epoch = max(self.epoch, reply.epoch)
        return reply

    def wait_command(
        self,
        leader: JobManager,
        kind: type[StartAttempt] | type[CancelAttempt],
        job_id: str,
        *reports: AttemptReport,
        timeout: float = SETTLE,
    ) -> tuple[Any, HeartbeatReply]:
        """Heartbeat (with ``reports``) until the leader answers with such a command."""

        def command() -> tuple[Any, HeartbeatReply] | None:
            reply = self.heartbeat(leader, *reports)
            for candidate in reply.commands:
                if isinstance(candidate, kind) and candidate.job_id == job_id:
                    return candidate, reply
            return None

        return wait_until(
            command,
            timeout,
            interval=HEARTBEAT_INTERVAL / 2,
            message=f"{self.id} gets a {kind.__name__} for {job_id}",
        )

    def lease(self, start: StartAttempt) -> None:
        """Take ``start``'s execution lease, as a TaskManager does before it spawns the runner."""
        self.zk.create(
            self.cluster.layout.execution(start.job_id),
            ExecutionLease(taskmanager=self.id, attempt=start.attempt, epoch=start.epoch).to_json(),
            ephemeral=True,
        )


def report(
    start: StartAttempt,
    phase: AttemptPhase,
    outcome: FinishedEvent | FailedEvent | None = None,
    *,
    rejection: Rejection | None = None,
) -> AttemptReport:
    """The report of ``start``'s attempt in ``phase``."""
    return AttemptReport(
        job_id=start.job_id,
        attempt=start.attempt,
        epoch=start.epoch,
        phase=phase,
        pid=4242 if phase in (AttemptPhase.RUNNING, AttemptPhase.ENDED) else None,
        started_at=1_700_000_000.0 if phase in (AttemptPhase.RUNNING, AttemptPhase.ENDED) else None,
        ended_at=1_700_000_100.0 if phase is AttemptPhase.ENDED else None,
        outcome=outcome,
        rejection=rejection,
        rejection_message="refused by the test" if rejection else None,
        lease_released=phase in (AttemptPhase.ENDED, AttemptPhase.REJECTED),
    )
