"""Pipelines that misbehave: exit the interpreter, hang, flood their output.

Each fails (or is cancelled) alone: the job gets a clear outcome, its processes are gone, and
every Steward process keeps running and answering.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from steward.testing.processes import ProcessCluster
from steward.wire.jobs import NoRestart
from support import wait_until

pytestmark = pytest.mark.zookeeper

EXITS = {
    "os-exit": "import os\n\ndef main(ctx):\n    os._exit(7)\n",
    "sys-exit": "import sys\n\ndef main(ctx):\n    sys.exit(5)\n",
    "sys-exit-msg": "import sys\n\ndef main(ctx):\n    sys.exit('giving up')\n",
}

# Ignores SIGTERM, starts a child in its own process group (as a Spark JVM would be), records
# both pids, then hangs.
HANGING = """
import os, signal, subprocess, sys, time

def main(ctx):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import signal, time;"
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
    with open(ctx.args[0], "w") as out:
        out.write(f"{os.getpid()} {child.pid}\\n")
    while True:
        time.sleep(1)
"""

# Writes args[0] MB to stdout as fast as it can, between a first and a last line, then returns.
FLOOD = """
import sys

def main(ctx):
    print("FLOOD FIRST LINE", flush=True)
    line = ("x" * 1023 + "\\n").encode()
    block = line * 1024
    for _ in range(int(ctx.args[0])):
        sys.stdout.buffer.write(block)
    sys.stdout.flush()
    print("FLOOD LAST LINE", flush=True)
    return {"flooded_mb": int(ctx.args[0])}
"""
LOG_CAP = 64 * 1024 * 1024  # taskmanager.attempt-log.max-size, default


def _pipeline(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    return path


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _responsive(cluster: ProcessCluster) -> None:
    for proc in cluster.jobmanagers():
        started = time.monotonic()
        assert httpx.get(proc.address + "/healthz", timeout=10).status_code == 200
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("name", sorted(EXITS))
def test_pipeline_that_exits_the_interpreter_fails_alone(
    cluster: ProcessCluster, tmp_path: Path, name: str
) -> None:
    with cluster.client() as client:
        client.submit(_pipeline(tmp_path, name, EXITS[name]), job_id=name, restart=NoRestart())
        result = client.wait(name, timeout=60)
    assert result.state.value == "FAILED", result
    assert result.error is not None and result.error.message, result
    _responsive(cluster)


def test_hanging_pipeline_is_cancelled_with_its_whole_process_group(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    pipeline = _pipeline(tmp_path, "hanging", HANGING)
    with cluster.client() as client:
        client.submit(pipeline, args=[str(pids_file)], job_id="hangs", restart=NoRestart())
        wait_until(lambda: pids_file.exists() and pids_file.read_text().endswith("\n"), 30)
        runner, child = (int(pid) for pid in pids_file.read_text().split())
        client.cancel("hangs")
        result = client.wait("hangs", timeout=60)
    assert result.state.value == "CANCELED"
    # SIGTERM is ignored by both: the grace (2s) ends in SIGKILL of the whole group.
    wait_until(lambda: _gone(runner) and _gone(child), 30, message="runner and child gone")
    _responsive(cluster)


def test_flooding_pipeline_leaves_the_cluster_responsive_and_bounded(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    taskmanager = next(p for p in cluster.procs if p.role == "taskmanager")
    tm = psutil.Process(taskmanager.pid)
    rss_before = tm.memory_info().rss
    peak = rss_before
    with cluster.client() as client:
        client.submit(
            _pipeline(tmp_path, "flood", FLOOD), args=["200"], job_id="flood", restart=NoRestart()
        )

        def done() -> bool:
            nonlocal peak
            peak = max(peak, tm.memory_info().rss)
            _responsive(cluster)
            return client.job("flood").state.is_terminal

        wait_until(done, 120, interval=0.2, message="flood job ends")
        result = client.result("flood")
    assert result.state.value == "FINISHED", result
    assert result.value == {"flooded_mb": 200}
    # The TaskManager never holds the output in memory.
    assert peak - rss_before < 100 * 1024 * 1024, (rss_before, peak)
    log = Path(cluster.settings["taskmanager.workdir"]) / "tm-1" / "flood" / "1" / "runner.log"
    # The log capper writes the last lines once the runner is gone: wait for them.
    wait_until(lambda: b"attempt finished job=flood" in _tail(log), 60, message="log complete")
    text = log.read_bytes()
    print(f"tm rss before={rss_before >> 20}MB peak={peak >> 20}MB runner.log={len(text)} bytes")
    assert len(text) <= LOG_CAP, "200 MB printed, at most the cap on disk"
    assert b"FLOOD FIRST LINE" in text[: LOG_CAP // 2]
    head, marker, tail = text.partition(b" bytes dropped")
    assert marker and head.rsplit(b"... ", 1)[1].isdigit(), "one marker line counts the drop"
    dropped = int(head.rsplit(b"... ", 1)[1])
    assert dropped > 200 * 1024 * 1024 - LOG_CAP
    assert b"FLOOD LAST LINE" in tail
    # The TaskManager counts what its capper dropped (a metric to alert on)
    view = cluster.cluster_view() or {}
    metrics_url = view["taskmanagers"][0]["http_address"] + "/metrics"

    def counted() -> float | None:
        answer = httpx.get(metrics_url, headers=cluster.headers, timeout=10)
        samples = [
            s.value
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples
            if s.name == "steward_taskmanager_attempt_log_dropped_bytes_total"
        ]
        return samples[0] if samples and samples[0] > 0 else None  # None: not counted yet

    assert wait_until(counted, 30, message="drops counted") == dropped
    os.sync()


def _tail(path: Path) -> bytes:
    if not path.exists():
        return b""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 65536))
        return handle.read()
