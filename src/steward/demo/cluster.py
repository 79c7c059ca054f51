"""The README's main job: a real PySpark pipeline survives the death of the leading JobManager.

1. starts a local cluster (managed ZooKeeper, 2 JobManagers, 2 TaskManagers) in ``workdir``;
2. submits ``examples/wordcount.py`` on the shipped sample text;
3. once the attempt runs, SIGKILLs the leading JobManager (no goodbye: its ZooKeeper session
   lives on, but its port now refuses connections, and the standby's crash detector removes
   the dead leader's latch instead of waiting for the session to expire);
4. measures the failover (kill -> the standby leads, has recovered, and answers);
5. waits for the result, checks the counts against a count made here in Python, and shows
   that the attempt was adopted, not restarted;
6. stops the cluster.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from steward.client import Client
from steward.cluster.hosts import Topology
from steward.cluster.local import LocalCluster, StartOptions
from steward.cluster.settings import UserSettings
from steward.cluster.workdir import ClusterState, Role, load_state
from steward.errors import StewardError
from steward.wire.jobs import NoRestart
from steward.wire.rest import JobView
from steward.wire.states import JobState

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
WORDS = re.compile("[^a-z]+")


class DemoError(StewardError):
    """The demo could not show what it set out to show."""


def expected_counts(text: str) -> tuple[int, int]:
    """Total and distinct words of ``text``, counted the way examples/wordcount.py counts."""
    counts = collections.Counter(w for w in WORDS.split(text.lower()) if w)
    return sum(counts.values()), len(counts)


def run(workdir: Path, *, session_timeout: str = "4s") -> None:
    console = Console(highlight=False)
    pipeline = EXAMPLES / "wordcount.py"
    source = EXAMPLES / "data" / "sample.txt"
    if not pipeline.is_file() or not source.is_file():
        raise DemoError(f"the demo needs the repository's examples/ folder (looked in {EXAMPLES})")
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(workdir)
    if load_state(cluster.state_dir) is not None:
        cluster.stop(purge=True)  # a previous demo's leftovers
    settings = UserSettings(
        raw={"high-availability.zookeeper.session-timeout": session_timeout},
        environ={},
    )
    console.rule("[bold]Steward demo: a PySpark word count survives its leader's death")
    console.print("starting a local cluster: ZooKeeper, 2 JobManagers, 2 TaskManagers ...")
    state = cluster.start(
        StartOptions(Topology((None, None), 2), settings, slots=2),
        progress=lambda message: console.print(f"  {message}"),
    )
    try:
        _demo(
            console,
            state,
            pipeline=pipeline,
            source=source,
            workdir=workdir,
            session_timeout=session_timeout,
        )
    finally:
        console.print("stopping the cluster ...")
        cluster.stop()
    console.print(f"[green]done[/]. Logs of every process: {cluster.state_dir.logs}")


def _demo(
    console: Console,
    state: ClusterState,
    *,
    pipeline: Path,
    source: Path,
    workdir: Path,
    session_timeout: str,
) -> None:
    output = workdir / f"wordcount-{time.strftime('%Y%m%d-%H%M%S')}"
    # In the cluster's folder: the client uses its admin token (.steward/admin.token).
    with Client(state.jobmanager_addresses, timeout=60, workdir=workdir) as client:
        leader = client.leader()
        if leader is None:
            raise DemoError("the cluster has no leader")
        console.print(f"leader: [bold]{leader.id}[/] at {leader.address} (epoch {leader.epoch})")
        job = client.submit(
            pipeline,
            args=[str(source), str(output)],
            name="demo word count",
            restart=NoRestart(),
        )
        console.print(f"submitted [bold]{job.job_id}[/]: wordcount.py {source.name} -> {output}")
        running = _wait_running(client, job.job_id)
        attempt = running.attempts[-1]
        console.print(
            f"attempt {attempt.number} runs on {attempt.taskmanager} (epoch {attempt.epoch})"
        )
        victim = next(p for p in state.of_role(Role.JOBMANAGER) if p.id == leader.id)
        assert victim.pid is not None
        console.print(
            f"[red]SIGKILL[/] the leading JobManager {leader.id} (pid {victim.pid});"
            f" session timeout {session_timeout}"
        )
        killed_at = time.monotonic()
        os.kill(victim.pid, signal.SIGKILL)
        leader_after = _wait_new_leader(state, leader.id)
        new_leader, address = leader_after
        failover = time.monotonic() - killed_at
        console.print(
            f"[green]{new_leader} leads[/] and has recovered its jobs after"
            f" [bold]{failover:.2f} s[/]"
        )
        after = client.job(job.job_id)
        ran_once = after.attempt_count <= 1
        if after.attempts:
            last = after.attempts[-1]
            how = "adopted" if last.adopted_by else "not adopted"
            console.print(
                f"after the failover the job is {after.state.value}; attempt {last.number}"
                f" on {last.taskmanager}: {how} by epoch(s) {last.adopted_by}"
            )
        result = client.wait(job.job_id, timeout=300)
    words, distinct = expected_counts(source.read_text())
    table = Table(title="result")
    table.add_column("")
    table.add_column("Steward")
    table.add_column("counted here")
    value = result.value if isinstance(result.value, dict) else {}
    table.add_row("state", result.state.value, "FINISHED")
    table.add_row("words", str(value.get("words")), str(words))
    table.add_row("distinct", str(value.get("distinct")), str(distinct))
    table.add_row(
        "failover", f"{failover:.2f} s", f"session timeout {session_timeout} (not waited for)"
    )
    table.add_row("new leader", f"{new_leader} at {address}", "")
    console.print(table)
    new_leader, address = leader_after
    if result.state.value != "FINISHED" or value.get("words") != words:
        error = result.error.message if result.error else "wrong counts"
        raise DemoError(f"the word count did not finish correctly: {error}")
    if value.get("distinct") != distinct:
        raise DemoError("the word count's distinct words are wrong")
    if not ran_once:
        raise DemoError("the job was restarted instead of adopted")
    console.print("[green]the counts are correct, and the attempt ran once.[/]")


def _wait_running(client: Client, job_id: str, timeout: float = 120.0) -> JobView:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = client.job(job_id)
        if view.state is JobState.RUNNING:
            return view
        if view.state.is_terminal:
            raise DemoError(f"the job ended before the demo could kill its leader: {view}")
        time.sleep(0.1)
    raise DemoError(f"the job did not start within {timeout:g}s")


def _wait_new_leader(state: ClusterState, old: str, timeout: float = 120.0) -> tuple[str, str]:
    """Poll the surviving JobManagers until one leads, is recovered, and answers."""
    deadline = time.monotonic() + timeout
    survivors = [p for p in state.of_role(Role.JOBMANAGER) if p.id != old and p.address]
    with httpx.Client(timeout=1.0) as http:
        while time.monotonic() < deadline:
            for proc in survivors:
                assert proc.address is not None
                try:
                    ready = http.get(proc.address + "/readyz")
                except httpx.HTTPError:
                    continue
                if ready.status_code == 200 and ready.json().get("role") == "leader":
                    return proc.id, proc.address
            time.sleep(0.05)
    raise DemoError(f"no JobManager took over within {timeout:g}s")
