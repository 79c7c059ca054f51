"""Liveness probe: what a ``sync`` round trip costs against the ``exists`` it replaced.

The liveness probe (``steward.ha.liveness``) proves its session alive with one round trip every
fence-after / 8. It used ``exists``, which a follower answers from its own copy, also while it
is cut off from the ZooKeeper leader (for up to syncLimit x tickTime); it now uses ``sync``,
which a follower answers only after the leader did (issue 23). This measures the price of
that hop on a real 3-server ensemble on loopback: for a client of the leader and for a client
of a follower, ``--rounds`` round trips of each kind, alternating, one at a time as the probe
makes them.

Reported by medians and 99th percentiles, as the ratio of the medians sync / exists for the
follower's client (goal: <= 3, one hop more; either is a few milliseconds where the probe's
period is 750 ms by default).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kazoo.client import KazooClient

from _common import Json, TempZooKeeper, cluster_document, parser, progress, run_main, summary_row
from steward.testing.zookeeper import start_ensemble
from steward.zookeeper.fourletter import ServerMode, serving_mode

ROOT = "/steward-bench-liveness"
GOAL_RATIO = 3.0


def _p99(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)]


def measure(port: int, rounds: int) -> Json:
    """``rounds`` exists and sync round trips, alternating, from a client of ``port`` alone."""
    client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path(ROOT)
        ways: dict[str, Callable[[], object]] = {
            "exists": lambda: client.exists_async(ROOT).get(timeout=5),
            "sync": lambda: client.sync_async(ROOT).get(timeout=5),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for index in range(rounds):
            for name in sorted(ways, reverse=index % 2 == 1):
                started = time.perf_counter()
                ways[name]()
                times[name].append((time.perf_counter() - started) * 1000)
    finally:
        client.stop()
        client.close()
    return {
        name: {"median_ms": round(statistics.median(v), 3), "p99_ms": round(_p99(v), 3)}
        for name, v in times.items()
    }


def rows(points: dict[str, Json]) -> list[Json]:
    follower = points["follower"]
    ratio = follower["sync"]["median_ms"] / follower["exists"]["median_ms"]
    p99 = follower["sync"]["p99_ms"]
    return [
        summary_row(
            "liveness probe round trip through a follower, sync over exists",
            ratio,
            "ratio",
            goal=f"<= {GOAL_RATIO:g}",
            met=ratio <= GOAL_RATIO,
            note=f"sync median {follower['sync']['median_ms']:.3f} ms, p99 {p99:.3f} ms;"
            f" leader's client: sync {points['leader']['sync']['median_ms']:.3f} ms",
        )
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--rounds", type=int, default=None, help="round trips of each kind (2000)")
    args = cli.parse_args()
    rounds = args.rounds or (200 if args.quick else 2000)
    parameters: Json = {"rounds": rounds, "servers": 3, "quick": args.quick}

    def body() -> Json:
        with tempfile.TemporaryDirectory(prefix="steward-bench-liveness-") as tmp:
            ensemble = start_ensemble(Path(tmp) / "zookeeper", servers=3)
            try:
                by_mode = {serving_mode(port): port for port in ensemble.client_ports.values()}
                ports = {
                    "leader": by_mode[ServerMode.LEADER],
                    "follower": by_mode[ServerMode.FOLLOWER],
                }
                points = {role: measure(port, rounds) for role, port in ports.items()}
                progress(f"liveness probe: {points}")
                zookeeper = TempZooKeeper(ensemble, ports["leader"], Path(tmp))
                return cluster_document(
                    "liveness_probe", parameters, points, rows(points), zookeeper
                )
            finally:
                ensemble.stop()

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
