"""Starting the local cluster's JobManagers and TaskManagers in the background, and stopping
exactly those processes.

Each runs ``python -m steward.cli --config .steward/steward.toml [-D jobmanager.port=P]
jobmanager|taskmanager --id <id>`` in a session of its own (closing the terminal or the end of
the CLI does not stop it), its output appended to ``.steward/logs/<role>-<n>.log``. A recorded
process counts as ours only while its pid, its create time and its config path in argv all
match (:mod:`steward.supervisor.detached`), so ``stop`` never signals a process that merely
reuses a recorded pid.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import psutil

from steward.cluster.workdir import ProcessEntry, Role, StateDir
from steward.errors import LocalClusterError, ManagedZooKeeperError, PortInUseError
from steward.supervisor.detached import find_live, spawn, terminate
from steward.zookeeper.layout import LOOPBACK, port_is_free, stable_port

log = logging.getLogger(__name__)


_ID_PREFIX = {Role.JOBMANAGER: "jm", Role.TASKMANAGER: "tm", Role.ZOOKEEPER: "zk"}


def process_id(role: Role, number: int) -> str:
    """``jm-1``, ``tm-2``: the ``--id`` of the n-th process of a role."""
    return f"{_ID_PREFIX[role]}-{number}"


def command(
    config: Path, role: Role, proc_id: str, port: int | None = None, bind: str | None = None
) -> list[str]:
    """Its command line; ``bind``: the address it listens on, for a process on another host
    (the name or address its masters or workers line gave)."""
    argv = [sys.executable, "-m", "steward.cli", "--config", str(config)]
    if port is not None:
        argv += ["-D", f"jobmanager.port={port}"]
    if bind is not None:
        argv += ["-D", f"{role.value}.bind-host={bind}"]
    return [*argv, role.value, "--id", proc_id]


def launch(
    state_dir: StateDir,
    role: Role,
    number: int,
    *,
    port: int | None = None,
    host: str = LOOPBACK,
    scheme: str = "http",
    bind: str | None = None,
) -> tuple[subprocess.Popen[bytes], ProcessEntry]:
    """Start the n-th JobManager (on ``port``, its address ``scheme``://``host``:``port``) or
    TaskManager; returns its handle and record. ``bind``: see :func:`command`."""
    proc_id = process_id(role, number)
    log_path = state_dir.log(role, number)
    argv = command(state_dir.config, role, proc_id, port, bind)
    child, record = spawn(argv, log_path, marker=str(state_dir.config))
    address = f"{scheme}://{host}:{port}" if port is not None else None
    entry = ProcessEntry(
        role=role,
        id=proc_id,
        pid=record.pid,
        create_time=record.create_time,
        marker=record.marker,
        address=address,
        log=str(log_path),
    )
    log.info("started role=%s id=%s pid=%d", role, proc_id, record.pid)
    return child, entry


def live_process(entry: ProcessEntry) -> psutil.Process | None:
    """The recorded process if it still runs and is still the one started, else None."""
    return find_live(entry.record)


def stop(entries: Sequence[ProcessEntry], *, timeout: float) -> list[ProcessEntry]:
    """SIGTERM the recorded processes that are still ours, SIGKILL after ``timeout``; wait
    until they are gone. Returns those that were running."""
    running = [(entry, process) for entry in entries if (process := live_process(entry))]
    try:
        terminate([process for _entry, process in running], graceful=True, timeout=timeout)
    except ManagedZooKeeperError as exc:  # terminate() is shared with the managed ZooKeeper
        raise LocalClusterError(str(exc)) from exc
    return [entry for entry, _process in running]


def choose_ports(required: Sequence[int | None], remembered: Sequence[int]) -> list[int]:
    """One free port per JobManager: the one ``required`` (masters file) if given, which must be
    free; else the one it had before if free (stable addresses); else any free one."""
    chosen: list[int] = []
    for index, port in enumerate(required):
        if port is not None:
            if not port_is_free(port):
                raise LocalClusterError(
                    f"port {port} of JobManager {index + 1} (masters file) is in use;"
                    " `ss -ltnp 'sport = :{port}'` names the process"
                )
            chosen.append(port)
        elif index < len(remembered) and _usable(remembered[index], chosen):
            chosen.append(remembered[index])
        else:
            chosen.append(free_port(exclude=chosen))
    return chosen


def free_port(exclude: Sequence[int] = ()) -> int:
    """A port on 127.0.0.1 that is free now, outside the ephemeral range."""
    try:
        return stable_port(exclude)
    except PortInUseError as exc:
        raise LocalClusterError(str(exc)) from None


def _usable(port: int, taken: Sequence[int]) -> bool:
    return port not in taken and port_is_free(port)
