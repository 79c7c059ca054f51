"""The foundation demo: real contender processes, a real ZooKeeper, real signals.

Starts a managed ZooKeeper, three contender processes (what JobManagers will be), and then:

1. SIGKILLs the leader: its session must expire before a standby may lead, so the takeover
   takes about one session timeout; the next leader's epoch is higher.
2. SIGTERMs the new leader: it releases leadership on the way out, and the last standby takes
   over at once, again with a higher epoch.

Everything it starts lives in ``<workdir>/demo/`` and is stopped at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import Session
from steward.wire.records import LeaderInfo
from steward.zookeeper.layout import port_is_free
from steward.zookeeper.managed import ManagedEnsemble

CONTENDERS = ("jm-1", "jm-2", "jm-3")


@dataclass(frozen=True)
class Failover:
    how: str
    old: LeaderInfo
    new: LeaderInfo
    seconds: float


def _free_port(preferred: int) -> int:
    port = preferred
    while not port_is_free(port):
        port += 1
    return port


def _spawn(
    quorum: str, root: str, contender: str, timeout: str, logs: Path
) -> subprocess.Popen[bytes]:
    log = (logs / f"{contender}.log").open("wb")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steward.demo.contender",
            "--quorum",
            quorum,
            "--root",
            root,
            "--id",
            contender,
            "--session-timeout",
            timeout,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _take_over(
    retrieval: LeaderRetrieval, old: LeaderInfo, deadline: float
) -> tuple[LeaderInfo, float]:
    started = time.monotonic()
    new = retrieval.wait_for_leader(deadline, lambda info: info.epoch > old.epoch)
    if new is None or new.epoch <= old.epoch:
        raise RuntimeError(f"no new leader within {deadline:g}s after {old.contender} went away")
    return new, time.monotonic() - started


def run(
    workdir: Path, session_timeout: float = 4.0, console: Console | None = None
) -> list[Failover]:
    """Run the demo; returns the two failovers it measured."""
    console = console or Console()
    base = workdir / "demo"
    logs = base / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ensemble = ManagedEnsemble(base / "zookeeper")
    port = _free_port(2181)
    console.print(f"[bold]1.[/] starting a managed ZooKeeper on 127.0.0.1:{port}")
    ensemble.start(servers=1, client_port=port)
    root = f"/steward/demo-{os.getpid()}"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    timeout_arg = f"{int(session_timeout * 1000)}ms"
    try:
        with Session(ensemble.connect_string, root, name="demo") as session:
            retrieval = LeaderRetrieval(session).start()
            console.print(
                f"[bold]2.[/] starting contenders {', '.join(CONTENDERS)}"
                f" (session timeout {session_timeout:g}s)"
            )
            for contender in CONTENDERS:
                processes[contender] = _spawn(
                    ensemble.connect_string, root, contender, timeout_arg, logs
                )
            first = retrieval.wait_for_leader(30)
            if first is None:
                raise RuntimeError("no leader was elected within 30s")
            console.print(f"   leader: [green]{first.contender}[/] epoch {first.epoch}")

            console.print(f"[bold]3.[/] SIGKILL {first.contender} (its session must expire first)")
            processes[first.contender].send_signal(signal.SIGKILL)
            second, crash_seconds = _take_over(retrieval, first, session_timeout * 3 + 10)
            console.print(
                f"   leader: [green]{second.contender}[/] epoch {second.epoch}"
                f" after {crash_seconds:.2f}s"
            )

            console.print(f"[bold]4.[/] SIGTERM {second.contender} (it releases leadership)")
            processes[second.contender].send_signal(signal.SIGTERM)
            third, graceful_seconds = _take_over(retrieval, second, session_timeout * 3 + 10)
            console.print(
                f"   leader: [green]{third.contender}[/] epoch {third.epoch}"
                f" after {graceful_seconds:.2f}s"
            )
            retrieval.stop()
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        ensemble.stop()
    failovers = [
        Failover("SIGKILL (session expiry)", first, second, crash_seconds),
        Failover("SIGTERM (graceful release)", second, third, graceful_seconds),
    ]
    _report(console, failovers, session_timeout)
    return failovers


def _report(console: Console, failovers: list[Failover], session_timeout: float) -> None:
    table = Table(title="Leader failovers")
    for column in ("leader stopped by", "old leader (epoch)", "new leader (epoch)", "takeover"):
        table.add_column(column)
    for f in failovers:
        table.add_row(
            f.how,
            f"{f.old.contender} ({f.old.epoch})",
            f"{f.new.contender} ({f.new.epoch})",
            f"{f.seconds:.2f}s",
        )
    console.print(table)
    console.print(
        f"session timeout: {session_timeout:g}s; epochs strictly increased:"
        f" {all(f.new.epoch > f.old.epoch for f in failovers)}"
    )
