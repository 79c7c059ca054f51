"""The cluster's processes on other hosts: prepared, started, checked and stopped over SSH.

What ``LocalCluster`` does on the hosts of its masters and workers files that are not this
machine, each step one ``steward cluster node`` command per host (:mod:`steward.cluster.remote`):

- ``prepare`` runs before anything starts, on every host at once: it sends the cluster's
  configuration and credential files, and checks that a file written here in the HA storage
  is visible there (a ``file://`` storage must be one shared file system, mounted at the same
  path on every host; an object store is shared by nature). A host that cannot be reached,
  or does not share the storage, is reported with every other such host, and nothing starts;
- ``launch`` starts one process on its host and returns its record;
- ``alive`` and ``stop`` ask each host about the processes recorded there; a host that cannot
  be reached is reported by name, never taken for a stopped one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from steward.cluster.node import NodeProcess
from steward.cluster.remote import Remote, RemoteHostError, on_each
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir
from steward.config import Configuration, load
from steward.errors import LocalClusterError, StewardError
from steward.files import TEMPORARY_SUFFIX
from steward.security.credentials import ADMIN_TOKEN_FILE

TLS_DIR = "tls"
"""``.steward/tls/``: the private CA and certificate of ``cluster start --tls``."""

_NOT_SENT = frozenset({"cluster.json", ADMIN_TOKEN_FILE, ".lock"})
"""Files of ``.steward/`` that stay on this machine: its own record, and the admin token (the
other hosts' processes do not need it; the operator's commands run here)."""
TLS_SENT = ("ca.pem", "server.pem", "server-key.pem")
"""Of ``--tls``'s folder, what the processes read (``rest.ssl.*``); the CA's key, which would
let its holder issue certificates, never leaves this machine."""


class Fleet:
    """The other hosts of one cluster."""

    def __init__(self, remote: Remote, state_dir: StateDir) -> None:
        self.remote = remote
        self.state_dir = state_dir

    @classmethod
    def of(cls, config: Configuration, state_dir: StateDir) -> Fleet:
        return cls(Remote.of(config.settings.cluster, state_dir.root.parent), state_dir)

    # ------------------------------------------------------------------ start

    def prepare(self, hosts: Iterable[str], storage_dir: str) -> None:
        """Send every host the cluster's files; raise naming every host that cannot be
        reached or does not see the storage."""
        files = self.files_to_send()
        payload = _encode(files)
        with shared_marker(storage_dir) as marker:
            args = ["receive", *(["--shared", str(marker)] if marker else [])]
            answers, failures = on_each(
                hosts, lambda host: self.remote.node(host, *args, stdin=payload)
            )
        for host, answer in answers.items():
            if not (isinstance(answer, dict) and answer.get("shared") is True):
                failures[host] = (
                    f"{host}: does not see the HA storage {storage_dir} (a file written there"
                    " here is not visible there): use an object store (s3://, gs://, hdfs://)"
                    " or mount one shared file system at the same path on every host"
                )
        if failures:
            raise LocalClusterError(
                "cannot start the cluster; nothing was started. "
                + "; ".join(failures[host] for host in sorted(failures))
            )

    def launch(
        self, host: str, role: Role, number: int, *, port: int | None, scheme: str
    ) -> ProcessEntry:
        args = ["start", "--role", role.value, "--number", str(number), "--scheme", scheme]
        if port is not None:
            args += ["--port", str(port)]
        answer = self.remote.node(host, *args)
        try:
            return ProcessEntry.model_validate({**answer, "host": host})
        except (TypeError, ValueError) as exc:
            raise RemoteHostError(host, f"answered an unreadable process record: {exc}") from exc

    # ------------------------------------------------------------------ status, stop

    def status(
        self, entries: Sequence[ProcessEntry], *, tail: bool = False
    ) -> tuple[dict[str, NodeProcess], dict[str, str]]:
        """Each remote entry's process (by id) as its host reports it; the unreachable hosts."""
        args = ["status", *(["--tail"] if tail else [])]
        answers, failures = on_each(_hosts(entries), lambda host: self.remote.node(host, *args))
        found: dict[str, NodeProcess] = {}
        for host, answer in answers.items():
            try:
                processes = [NodeProcess.model_validate(item) for item in answer]
            except (TypeError, ValueError) as exc:
                failures[host] = f"{host}: answered an unreadable status: {exc}"
                continue
            wanted = {entry.id for entry in entries if entry.host == host}
            found.update({p.id: p for p in processes if p.id in wanted})
        return found, failures

    def stop(
        self, entries: Sequence[ProcessEntry], *, timeout: float
    ) -> tuple[list[ProcessEntry], dict[str, str]]:
        """Stop the remote entries' processes, host by host at once: those that ran, and the
        hosts that could not be reached (whose processes may still run)."""
        answers, failures = on_each(
            _hosts(entries),
            lambda host: self.remote.node(host, "stop", "--timeout", str(timeout)),
        )
        stopped_ids = {(host, proc_id) for host, ids in answers.items() for proc_id in ids or []}
        stopped = [entry for entry in entries if (entry.host, entry.id) in stopped_ids]
        return stopped, failures

    # ------------------------------------------------------------------ files

    def files_to_send(self) -> dict[str, bytes]:
        """What every other host gets of `.steward/`: by path under it."""
        root = self.state_dir.root
        files = {
            path.name: path.read_bytes()
            for path in sorted(root.iterdir())
            if path.is_file()
            and path.name not in _NOT_SENT
            and not path.name.endswith(TEMPORARY_SUFFIX)
        }
        for name in TLS_SENT:
            path = root / TLS_DIR / name
            if path.is_file():
                files[f"{TLS_DIR}/{name}"] = path.read_bytes()
        return files


def fleet_for(state_dir: StateDir, state: ClusterState) -> Fleet:
    """The other hosts of a started cluster, reached as its ``steward.toml`` says (defaults if
    that file is gone)."""
    try:
        config = load(Path(state.config))
    except StewardError:
        config = load(None, environ={})
    return Fleet.of(config, state_dir)


def local_entries(entries: Iterable[ProcessEntry]) -> list[ProcessEntry]:
    return [entry for entry in entries if entry.host is None]


def remote_entries(entries: Iterable[ProcessEntry]) -> list[ProcessEntry]:
    return [entry for entry in entries if entry.host is not None]


def _hosts(entries: Iterable[ProcessEntry]) -> list[str]:
    return sorted({entry.host for entry in entries if entry.host is not None})


def _encode(files: dict[str, bytes]) -> bytes:
    return json.dumps({k: base64.b64encode(v).decode() for k, v in files.items()}).encode()


@contextlib.contextmanager
def shared_marker(storage_dir: str) -> Iterator[Path | None]:
    """A file written in a ``file://`` storage for the hosts to find (None for an object
    store), removed afterwards."""
    if "://" in storage_dir and not storage_dir.startswith("file://"):
        yield None
        return
    folder = Path(storage_dir.removeprefix("file://"))
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f".shared-check-{secrets.token_hex(6)}"
    marker.write_bytes(b"")
    try:
        yield marker
    finally:
        marker.unlink(missing_ok=True)
