"""The managed ensemble's state file, ``<data_dir>/ensemble.json``.

It records the ports of every server and, while a server runs, the identity of its process
(pid, start time, zoo.cfg path), so that ``stop`` and ``status`` work from any process (the
CLI that started the ensemble has long exited) and never touch a process that is not ours.
Written atomically (temp file + rename): a crash mid-write leaves the previous version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from steward import files
from steward.errors import ManagedZooKeeperError
from steward.supervisor.detached import ProcessRecord
from steward.zookeeper.layout import LOOPBACK, ServerPorts

SCHEMA = 1
STATE_FILE = "ensemble.json"


@dataclass(frozen=True)
class ServerRecord:
    """One server: its ports, and its process while it runs (None once stopped)."""

    ports: ServerPorts
    process: ProcessRecord | None = None


@dataclass(frozen=True)
class EnsembleState:
    """Every server of one managed ensemble."""

    client_port: int
    servers: tuple[ServerRecord, ...]

    def server(self, server_id: int) -> ServerRecord:
        """The record of ``server_id``, or ``ManagedZooKeeperError`` if there is none."""
        for record in self.servers:
            if record.ports.server_id == server_id:
                return record
        ids = [record.ports.server_id for record in self.servers]
        raise ManagedZooKeeperError(f"no server {server_id} in this ensemble (servers: {ids})")

    def with_process(self, server_id: int, process: ProcessRecord | None) -> EnsembleState:
        """A copy with the process of ``server_id`` replaced."""
        servers = tuple(
            replace(record, process=process) if record.ports.server_id == server_id else record
            for record in self.servers
        )
        return replace(self, servers=servers)


def load_state(data_dir: Path) -> EnsembleState | None:
    """The recorded state, or None if nothing was ever started in ``data_dir``."""
    path = data_dir / STATE_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return _from_json(document)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise ManagedZooKeeperError(
            f"{path} is not a valid managed ZooKeeper state file ({exc}); stop any ZooKeeper "
            "it started by hand and delete it"
        ) from exc


def save_state(data_dir: Path, state: EnsembleState) -> None:
    """Write ``state`` atomically."""
    path = data_dir / STATE_FILE
    files.write_atomically(path, json.dumps(_to_json(state), indent=2) + "\n")


def _to_json(state: EnsembleState) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "client_port": state.client_port,
        "servers": [_server_to_json(record) for record in state.servers],
    }


def _server_to_json(record: ServerRecord) -> dict[str, Any]:
    process = record.process
    return {
        "id": record.ports.server_id,
        "client_port": record.ports.client_port,
        "quorum_port": record.ports.quorum_port,
        "election_port": record.ports.election_port,
        "host": record.ports.host,
        "pid": process.pid if process else None,
        "create_time": process.create_time if process else None,
        "config": process.marker if process else None,
    }


def _from_json(document: dict[str, Any]) -> EnsembleState:
    if document["schema"] != SCHEMA:
        raise ValueError(f"schema {document['schema']}, this Steward reads {SCHEMA}")
    servers = tuple(_server_from_json(server) for server in document["servers"])
    return EnsembleState(client_port=int(document["client_port"]), servers=servers)


def _server_from_json(server: dict[str, Any]) -> ServerRecord:
    ports = ServerPorts(
        server_id=int(server["id"]),
        client_port=int(server["client_port"]),
        quorum_port=int(server["quorum_port"]),
        election_port=int(server["election_port"]),
        host=str(server.get("host", LOOPBACK)),
    )
    if server["pid"] is None:
        return ServerRecord(ports)
    process = ProcessRecord(
        pid=int(server["pid"]),
        create_time=float(server["create_time"]),
        marker=str(server["config"]),
    )
    return ServerRecord(ports, process)
