"""The cost of security (issue 13): submission latency and heartbeat cost with TLS and bearer
tokens on and off, measured in the same run.

Variants: ``plain`` (no TLS, no tokens), ``tls`` (``rest.ssl.*`` with a private CA made for the
run by :func:`steward.tls.certificates.ensure_local_tls`), ``tokens`` (``security.auth.
enabled``: every request carries the kit's admin token, every heartbeat the cluster's internal
credential) and ``tls+tokens``. The token variants run only where that key exists. Each round
starts one fresh cluster per variant (1 JobManager, 1 TaskManager) on one ZooKeeper, in an
order rotated from round to round (a steady drift of the machine then falls on every variant
alike), and measures:

- **heartbeats**: the CPU time the JobManager and the TaskManager use together over an idle
  window with ``heartbeat.interval`` short (``--heartbeat-interval``, 50 ms: about 20 long-poll
  heartbeats a second; an idle TaskManager sends one per interval), per second and per
  heartbeat (window / interval heartbeats: an estimate);
- **submission**: then the TaskManager is stopped (the jobs wait in SCHEDULED: no runner
  competes for the CPU) and one ``steward.Client`` submits ``--submissions`` small pipelines
  one after another over one keep-alive connection (p50, p99), as a script does;
- **a new connection**: ``GET /v1/cluster`` from a fresh HTTP client each time (TCP, and the
  TLS handshake when on), as each ``steward`` command does.

Reported: each variant's figure as the median over rounds of its per-round value, and its
overhead over ``plain`` (the issue's goal: under 5 % for tokens).
"""

from __future__ import annotations

import signal
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx
import psutil

from _cluster import QUICK, BenchCluster, bench_cluster
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    percentile,
    progress,
    rotated,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.config.keys import BY_KEY
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts

AUTH_KEY = "security.auth.enabled"
HAS_TOKENS = AUTH_KEY in BY_KEY
"""Whether this Steward has bearer tokens (issue 13's authentication) to measure."""


def variants(tls: TlsFiles) -> dict[str, dict[str, str]]:
    """Each variant's settings, on top of the benchmark cluster's."""
    on = {key: str(value).lower() if isinstance(value, bool) else str(value)
          for key, value in tls.settings().items()}  # fmt: skip
    off = {"rest.ssl.enabled": "false"}
    if not HAS_TOKENS:
        return {"plain": off, "tls": on}
    return {
        "plain": {**off, AUTH_KEY: "false"},
        "tls": {**on, AUTH_KEY: "false"},
        "tokens": {**off, AUTH_KEY: "true"},
        "tls+tokens": {**on, AUTH_KEY: "true"},
    }


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes used so far (not their children)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def heartbeat_cost(cluster: BenchCluster, window: float, interval: float) -> Json:
    pids = [proc.pid for proc in cluster.procs if proc.alive()]
    wall, before = time.monotonic(), cpu_seconds(pids)
    time.sleep(window)  # the measurement window itself, not a wait for something
    used, elapsed = cpu_seconds(pids) - before, time.monotonic() - wall
    beats = elapsed / interval
    return {
        "window_s": round(elapsed, 2),
        "cpu_ms_per_s": round(used / elapsed * 1000, 2),
        "heartbeats_estimated": round(beats),
        "cpu_ms_per_heartbeat": round(used / beats * 1000, 3),
    }


def submissions(cluster: BenchCluster, pipeline: Path, count: int, tag: str) -> Json:
    latencies = []
    with cluster.client(timeout=60) as client:
        for n in range(2):  # unmeasured: the first requests load code paths on both sides
            client.submit(pipeline, job_id=f"{tag}-warm-{n}")
        for n in range(count):
            started = time.perf_counter()
            client.submit(pipeline, job_id=f"{tag}-{n:04d}")
            latencies.append(time.perf_counter() - started)
    return _latency(latencies)


def new_connections(cluster: BenchCluster, count: int) -> Json:
    address = cluster.jobmanagers()[0].address
    verify = cluster.tls.context  # made once, as a client process makes it once
    headers = getattr(cluster, "headers", None)  # the kit's token, where tokens exist
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        with httpx.Client(timeout=10, headers=headers, verify=verify) as http:
            http.get(address + "/v1/cluster").raise_for_status()
        latencies.append(time.perf_counter() - started)
    return _latency(latencies)


def _latency(latencies: list[float]) -> Json:
    return {
        "n": len(latencies),
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
    }


def measure(
    zookeeper: TempZooKeeper, name: str, settings: Mapping[str, str], parameters: Json, rnd: int
) -> Json:
    pipeline = zookeeper.workdir / "quick.py"
    pipeline.write_text(QUICK)
    interval = parameters["heartbeat_interval_ms"] / 1000
    cluster_id = f"security-{name.replace('+', '-')}-{rnd}"
    extra = {**settings, "heartbeat.interval": f"{parameters['heartbeat_interval_ms']}ms"}
    with bench_cluster(zookeeper.workdir, zookeeper.connect_string, cluster_id, 4.0, verbose=False,
                       **extra) as cluster:  # fmt: skip
        cluster.start_jobmanager("jm-1")
        taskmanager = cluster.start_taskmanager("tm-1", slots=1)
        cluster.wait_taskmanagers(1, 60)
        beats = heartbeat_cost(cluster, parameters["idle_window_s"], interval)
        taskmanager.signal(signal.SIGTERM)
        wait_until(lambda: not taskmanager.alive(), 30, "the TaskManager stopped", interval=0.05)
        submitted = submissions(cluster, pipeline, parameters["submissions"], cluster_id)
        connections = new_connections(cluster, parameters["connections"])
        cluster.check_alive()
    progress(
        f"{name} round {rnd}: heartbeats {beats['cpu_ms_per_s']} CPU ms/s, submit p50"
        f" {submitted['p50_ms']} ms, new connection p50 {connections['p50_ms']} ms"
    )
    return {"heartbeats": beats, "submit": submitted, "new_connection": connections}


def run(zookeeper: TempZooKeeper, parameters: Json) -> Json:
    tls = ensure_local_tls(zookeeper.workdir / "tls", local_hosts())
    settings = variants(tls)
    names = list(settings)
    rounds: list[dict[str, Json]] = []
    for rnd in range(parameters["rounds"]):
        measured = {name: measure(zookeeper, name, settings[name], parameters, rnd)
                    for name in rotated(names, rnd)}  # fmt: skip
        rounds.append(measured)
    medians = {
        name: {
            "heartbeat_cpu_ms_per_s": _median(rounds, name, "heartbeats", "cpu_ms_per_s"),
            "heartbeat_cpu_ms_each": _median(rounds, name, "heartbeats", "cpu_ms_per_heartbeat"),
            "submit_p50_ms": _median(rounds, name, "submit", "p50_ms"),
            "submit_p99_ms": _median(rounds, name, "submit", "p99_ms"),
            "new_connection_p50_ms": _median(rounds, name, "new_connection", "p50_ms"),
        }
        for name in names
    }
    return {"variants": names, "tokens_measured": HAS_TOKENS, "rounds": rounds,
            "medians": medians}  # fmt: skip


def _median(rounds: list[dict[str, Json]], name: str, group: str, figure: str) -> float:
    return round(statistics.median(r[name][group][figure] for r in rounds), 3)


def _overhead(medians: Json, name: str, figure: str) -> float:
    base = medians["plain"][figure]
    return round((medians[name][figure] / base - 1) * 100, 1) if base else 0.0


def rows(results: Json) -> list[Json]:
    medians = results["medians"]
    table = []
    figures = (
        ("submit_p50_ms", "submit latency p50", "ms"),
        ("new_connection_p50_ms", "new connection + GET /v1/cluster p50", "ms"),
        ("heartbeat_cpu_ms_per_s", "JobManager + TaskManager CPU with heartbeats", "ms/s"),
    )
    for name in results["variants"]:
        for figure, label, unit in figures:
            overhead = None if name == "plain" else _overhead(medians, name, figure)
            goal, met = "", None
            if name == "tokens" and figure != "new_connection_p50_ms":
                goal, met = "< 5 % over plain", overhead is not None and overhead < 5
            note = "" if overhead is None else f"{overhead:+.1f} % over plain"
            table.append(
                summary_row(f"{label}, {name}", medians[name][figure], unit, goal=goal, met=met,
                            note=note, digits=2)
            )  # fmt: skip
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--rounds", type=int, default=None, help="rounds of every variant (3)")
    cli.add_argument("--submissions", type=int, default=None, help="timed submits (40)")
    cli.add_argument("--heartbeat-interval", type=int, default=50, help="milliseconds (50)")
    args = cli.parse_args()
    parameters: Json = {
        "rounds": args.rounds or (1 if args.quick else 3),
        "submissions": args.submissions or (5 if args.quick else 40),
        "connections": 5 if args.quick else 30,
        "idle_window_s": 3.0 if args.quick else 15.0,
        "heartbeat_interval_ms": args.heartbeat_interval,
        "jobmanagers": 1,
        "taskmanagers": 1,
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("security_cost") as zookeeper:
            results = run(zookeeper, parameters)
            return cluster_document("security_cost", parameters, results, rows(results), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
