"""The CPU a batched ZooKeeper read costs the reading process, three ways (issue 22).

A takeover reads a few znodes per job (a result index, a graph pointer, a status record): at
10,000 jobs these reads were most of a new leader's time, each ~270 us of kazoo's CPU. This
creates ``--znodes`` znodes of ``--size`` bytes on a throwaway ZooKeeper and reads them all,
``--batch`` paths at a time, with one kazoo client (Steward's poll handler), three ways:

- ``get``: one ``client.get`` after the other (one round trip each);
- ``pipelined``: :func:`steward.store.zk.read_pipelined` (every get of a batch sent, then every
  answer awaited: one request per znode, one round trip per batch; ``read_many`` before
  multiRead);
- ``multiread``: :func:`steward.store.zk.read_many`: ZooKeeper's multiRead (opcode 22), one
  request and one answer per batch.

A tenth of the paths do not exist (a missing node is answered per read). Each round reads
every znode once each way, the order of the ways rotated round by round; the figure is the
median over rounds of the process's CPU time (every thread: kazoo's connection thread does half
the work) per read, and of the wall time per read. ``ratio`` is the way's CPU per read over
``multiread``'s. The answers of the three ways are checked equal.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from _common import (
    TMPFS,
    Json,
    document,
    parser,
    progress,
    rotated,
    run_main,
    temp_zookeeper,
)
from steward.ha.kazoo_handler import PollHandler
from steward.store import zk

ROOT = "/bench-reads"
Read = tuple[bytes, Any] | None


def _get_each(client: KazooClient, paths: list[str]) -> list[Read]:
    found: list[Read] = []
    for path in paths:
        try:
            data, stat = client.get(path)
        except NoNodeError:
            found.append(None)
            continue
        found.append((bytes(data or b""), stat))
    return found


WAYS: dict[str, Callable[[KazooClient, list[str]], list[Read]]] = {
    "get": _get_each,
    "pipelined": zk.read_pipelined,
    "multiread": zk.read_many,
}


def _populate(client: KazooClient, znodes: int, size: int) -> list[str]:
    paths = [f"{ROOT}/job-{index:06d}/status" for index in range(znodes)]
    body = b"s" * size
    for start in range(0, znodes, 500):
        group = [p for i, p in enumerate(paths[start : start + 500], start) if i % 10 != 9]
        for pending in [client.create_async(p, body, makepath=True) for p in group]:
            pending.get()
    return paths


def _read_all(client: KazooClient, way: str, paths: list[str], batch: int) -> list[Read]:
    found: list[Read] = []
    for start in range(0, len(paths), batch):
        found.extend(WAYS[way](client, paths[start : start + batch]))
    return found


def measure(client: KazooClient, paths: list[str], batch: int, rounds: int) -> Json:
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}
    wall: dict[str, list[float]] = {way: [] for way in WAYS}
    for round_index in range(rounds):
        answers = {}
        for way in rotated(list(WAYS), round_index):
            started_cpu, started = time.process_time(), time.perf_counter()
            answers[way] = _read_all(client, way, paths, batch)
            cpu[way].append((time.process_time() - started_cpu) / len(paths) * 1e6)
            wall[way].append((time.perf_counter() - started) / len(paths) * 1e6)
            progress(f"round {round_index} {way}: {cpu[way][-1]:.1f} us CPU a read")
        if len({repr(found) for found in answers.values()}) != 1:
            raise RuntimeError("the ways answered differently")
    base = statistics.median(cpu["multiread"])
    return {
        way: {
            "cpu_us_per_read": round(statistics.median(cpu[way]), 1),
            "wall_us_per_read": round(statistics.median(wall[way]), 1),
            "cpu_us_per_read_rounds": [round(v, 1) for v in cpu[way]],
            "ratio": round(statistics.median(cpu[way]) / base, 2),
        }
        for way in WAYS
    }


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--znodes", type=int, default=None, help="znodes read (10000)")
    cli.add_argument("--size", type=int, default=200, help="bytes of each znode (200)")
    cli.add_argument("--batch", type=int, default=zk.READ_BATCH, help="paths a batch (100)")
    cli.add_argument("--rounds", type=int, default=None, help="rounds (5)")
    args = cli.parse_args()
    znodes = args.znodes or (1000 if args.quick else 10_000)
    rounds = args.rounds or (2 if args.quick else 5)

    def body() -> Json:
        with temp_zookeeper("zk-reads", base=TMPFS) as zookeeper:
            client = KazooClient(zookeeper.connect_string, handler=PollHandler())
            client.start()
            try:
                paths = _populate(client, znodes, args.size)
                results = measure(client, paths, args.batch, rounds)
            finally:
                client.stop()
                client.close()
            parameters = {
                "znodes": znodes,
                "size": args.size,
                "batch": args.batch,
                "rounds": rounds,
                "missing": "every tenth path",
            }
            return document("zk_reads", parameters, results, zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
