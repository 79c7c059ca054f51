"""One host's share of a cluster started over SSH: what ``steward cluster node`` does there.

``steward cluster start`` on the machine an operator works from reaches every other host of
its ``masters`` and ``workers`` files over SSH (:mod:`steward.cluster.remote`) and runs
``python -m steward.cli cluster node <command>`` there, with the same workdir path (as Flink's
start-cluster.sh assumes the same install path on every host). On that host, this module:

- ``receive``: writes the cluster's files it was sent (``steward.toml`` and the credential
  files it names, mode 0600 under ``.steward/``), and says whether a path the sender wrote in
  the HA storage is visible here (the storage must be shared by every host);
- ``start``: starts one JobManager or TaskManager in the background, exactly as the local
  cluster does (:func:`steward.cluster.launcher.launch`), listening on the host's address,
  and records it in ``.steward/hosts/<host>.json``;
- ``status`` and ``stop``: the processes that file records, alive or not; stop signals only
  those that are still the processes started (pid, create time and argv checked).

Each host keeps its own log and state; the file is per host so that hosts sharing the
workdir's file system (an NFS home) do not overwrite each other's records. Answers are one
JSON document on stdout.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import ClassVar

from pydantic import Field

from steward.cluster import launcher
from steward.cluster.workdir import ProcessEntry, Role, StateDir
from steward.errors import CorruptStateError, LocalClusterError
from steward.files import write_atomically
from steward.supervisor.detached import log_tail
from steward.wire.values import Payload, Value

_LOG_TAIL_LINES = 25


class NodeState(Payload):
    """``.steward/hosts/<host>.json``: the processes started on one host."""

    kind_name: ClassVar[str] = "host process record"
    host: str
    processes: list[ProcessEntry] = Field(default_factory=list)


class NodeProcess(Value):
    """One recorded process in a ``status`` answer."""

    id: str
    pid: int
    alive: bool
    log: str
    log_tail: str | None = None


class Node:
    """The processes of one cluster (its workdir) on one host."""

    def __init__(self, workdir: Path, host: str) -> None:
        if not host or "/" in host or host.startswith("."):
            raise LocalClusterError(f"bad host name {host!r}")
        self.state_dir = StateDir.of(workdir)
        self.host = host
        self._file = self.state_dir.hosts / f"{host}.json"

    # ------------------------------------------------------------------ files

    def receive(self, files: Mapping[str, str], shared: str | None = None) -> bool:
        """Write ``files`` (path under ``.steward/`` -> base64 content), private to this user;
        whether ``shared`` (a path the sender wrote) is visible here (True if none asked)."""
        root = self.state_dir.root
        for relative, content in files.items():
            target = root / _inside(relative)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Hosts that share this folder (one file system) receive the same files at once:
            # each write has its own temporary name (steward.files).
            write_atomically(target, base64.b64decode(content, validate=True), mode=0o600)
        return shared is None or Path(shared).exists()

    # ------------------------------------------------------------------ processes

    def start(
        self, role: Role, number: int, *, port: int | None, scheme: str = "http"
    ) -> ProcessEntry:
        """Start the n-th JobManager or TaskManager here, listening on this host's address."""
        with self._locked():
            state = self._load()
            proc_id = launcher.process_id(role, number)
            running = [e for e in state.processes if e.id == proc_id and launcher.live_process(e)]
            if running:
                raise LocalClusterError(
                    f"{proc_id} already runs on {self.host} (pid {running[0].pid})"
                )
            for directory in (self.state_dir.logs, self.state_dir.work):
                directory.mkdir(parents=True, exist_ok=True)
            _child, entry = launcher.launch(
                self.state_dir,
                role,
                number,
                port=port,
                host=self.host,
                scheme=scheme,
                bind=self.host,
            )
            entry = entry.model_copy(update={"host": self.host})
            kept = [e for e in state.processes if e.id != proc_id]
            self._save(state.model_copy(update={"processes": [*kept, entry]}))
        return entry

    def status(self, *, tail: bool = False) -> list[NodeProcess]:
        return [
            NodeProcess(
                id=entry.id,
                pid=entry.pid,
                alive=launcher.live_process(entry) is not None,
                log=entry.log,
                log_tail=log_tail(Path(entry.log)) if tail else None,
            )
            for entry in self._load().processes
        ]

    def stop(self, *, timeout: float) -> list[str]:
        """Stop every recorded process that still runs; the ids of those that did."""
        with self._locked():
            state = self._load()
            stopped = launcher.stop(state.processes, timeout=timeout)
            self._save(state.model_copy(update={"processes": []}))
        return [entry.id for entry in stopped]

    # ------------------------------------------------------------------ its file

    def _load(self) -> NodeState:
        try:
            data = self._file.read_bytes()
        except FileNotFoundError:
            return NodeState(host=self.host)
        try:
            return NodeState.from_json(data)
        except CorruptStateError as exc:
            raise LocalClusterError(
                f"{self._file} on {self.host} is not a valid record ({exc}); stop its"
                " processes by hand and delete it"
            ) from exc

    def _save(self, state: NodeState) -> None:
        write_atomically(self._file, state.model_dump_json(by_alias=True, indent=2) + "\n")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # Not the state dir's own lock: on a shared file system the operator's `cluster
        # start`, which holds that one, would wait for this host and this host for it.
        self.state_dir.hosts.mkdir(parents=True, exist_ok=True)
        with (self.state_dir.hosts / f".{self.host}.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


def _inside(relative: str) -> PurePosixPath:
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise LocalClusterError(f"refusing to write {relative!r} outside .steward/")
    return path
