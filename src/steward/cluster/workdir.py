"""The local cluster's state directory, ``<workdir>/.steward/``, and its ``cluster.json``.

::

    .steward/cluster.json     cluster id, quorum, whether ZooKeeper is managed, and every process
                              ``steward cluster start`` started (role, id, pid, create time,
                              address, log): what ``status`` and ``stop`` work from
    .steward/steward.toml     the effective settings; every process, and every command run in
                              <workdir>, reads it (steward.config.LOCAL_CLUSTER_CONFIG)
    .steward/masters          optional: one JobManager host per line (see hosts.py)
    .steward/workers          optional: one TaskManager host per line
    .steward/logs/            <role>-<n>.log of every JobManager and TaskManager, appended
    .steward/zookeeper/       the managed ZooKeeper's data directory (ManagedEnsemble)
    .steward/zookeeper.digest the cluster's ZooKeeper credential, mode 0600 (steward.ha.acl)
    .steward/storage/         blob storage (high-availability.storage-dir)
    .steward/work/            the TaskManagers' work directories (taskmanager.workdir)
    .steward/tls/             with --tls: the private CA and certificate (steward.tls.certificates)
    .steward/hosts/<host>.json on a host of the masters or workers files: the processes
                              started there over SSH (steward.cluster.node)

``cluster.json`` is written atomically (temp file + rename) and read strictly: a malformed
file is a :class:`LocalClusterError` naming it, never a half-read cluster.
"""

from __future__ import annotations

import enum
import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from steward import files
from steward.errors import CorruptStateError, LocalClusterError
from steward.supervisor.detached import ProcessRecord
from steward.wire.values import Payload, Value

STATE_DIR_NAME = ".steward"


@dataclass(frozen=True)
class StateDir:
    """The paths of one local cluster's state directory (absolute)."""

    root: Path

    @classmethod
    def of(cls, workdir: Path) -> StateDir:
        """The state directory of the cluster run from ``workdir``."""
        return cls(workdir.absolute() / STATE_DIR_NAME)

    @property
    def cluster_json(self) -> Path:
        return self.root / "cluster.json"

    @property
    def config(self) -> Path:
        return self.root / "steward.toml"

    @property
    def masters(self) -> Path:
        return self.root / "masters"

    @property
    def workers(self) -> Path:
        return self.root / "workers"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def zookeeper(self) -> Path:
        return self.root / "zookeeper"

    @property
    def storage(self) -> Path:
        return self.root / "storage"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def zookeeper_digest(self) -> Path:
        """The cluster's ZooKeeper credential (``user:password``, mode 0600; steward.ha.acl)."""
        return self.root / "zookeeper.digest"

    @property
    def hosts(self) -> Path:
        return self.root / "hosts"

    def log(self, role: Role, number: int) -> Path:
        return self.logs / f"{role.value}-{number}.log"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Serialise start and stop of this cluster between processes."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


class Role(enum.StrEnum):
    ZOOKEEPER = "zookeeper"
    JOBMANAGER = "jobmanager"
    TASKMANAGER = "taskmanager"
    HISTORY_SERVER = "history-server"


class ProcessEntry(Value):
    """One process the cluster started. ``pid`` and ``create_time`` identify it together."""

    role: Role
    id: str
    pid: int
    create_time: float
    marker: str = Field(description="an argument of its command line, checked before a signal")
    address: str | None = None
    log: str
    host: str | None = Field(
        default=None, description="the host it runs on, started over SSH; None: this machine"
    )

    @property
    def where(self) -> str:
        """``jm-2 on 10.0.0.2`` or ``jm-2``, for messages."""
        return f"{self.id} on {self.host}" if self.host else self.id

    @property
    def record(self) -> ProcessRecord:
        return ProcessRecord(self.pid, self.create_time, self.marker)


class ClusterState(Payload):
    """``cluster.json``: what ``steward cluster start`` started, for ``status`` and ``stop``."""

    kind_name: ClassVar[str] = "local cluster state"
    cluster_id: str
    quorum: str
    managed_zookeeper: bool
    config: str = Field(description="the steward.toml every process was started with")
    started_at: float
    processes: list[ProcessEntry] = Field(default_factory=list)

    def of_role(self, role: Role) -> list[ProcessEntry]:
        return [entry for entry in self.processes if entry.role is role]

    @property
    def jobmanager_addresses(self) -> list[str]:
        return [e.address for e in self.of_role(Role.JOBMANAGER) if e.address]


def load_state(state_dir: StateDir) -> ClusterState | None:
    """The recorded cluster, or None if no cluster was ever started here."""
    path = state_dir.cluster_json
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return ClusterState.from_json(data)
    except CorruptStateError as exc:
        raise LocalClusterError(
            f"{path} is not a valid local cluster state file ({exc}); stop any process it"
            " started by hand and delete it"
        ) from exc


def save_state(state_dir: StateDir, state: ClusterState) -> None:
    """Write ``state`` atomically."""
    files.write_atomically(
        state_dir.cluster_json, state.model_dump_json(by_alias=True, indent=2) + "\n"
    )
