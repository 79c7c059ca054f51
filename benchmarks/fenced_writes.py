"""The cost of fencing: fenced writes per second against unfenced ones, same run, same znode.

Three ways to overwrite a znode of ``--size`` bytes, each ``--writes`` times per round:

- ``fenced``: ``fence.transaction().set_data(path, value).commit()``, what every leader write
  is (a 2-op multi: ``check(leader/epoch, version)`` + ``setData``, plus Steward's checks);
- ``plain_set``: ``client.set(path, value)``, a bare ``setData``;
- ``plain_multi``: an unfenced 1-op ``client.transaction()`` holding the same ``setData``,
  which separates the cost of the multi-op request from the cost of the epoch check.

The fence is a real one: this process wins a :class:`LeaderElection` first, and checks at the
end that a write under any other epoch is rejected (so what was measured really is fenced).
With ``--threads`` above 1, that many threads share the one session (as a leader's JobMasters
will), each rewriting its own znode; a block's time runs from a common start barrier to the
last join.

Drift and noise (other processes on the machine, the disk, the page cache) are cancelled two
ways: within a round the variants take turns in blocks of ``--block`` writes, so all three
see the same conditions, and each of the three rounds (``--rounds``) starts the turns with a
different variant. A variant's rate in a round is its writes over the sum of its blocks' times;
the figure is the median over the rounds. Every write is a synchronous round trip to a
standalone server that fsyncs its transaction log, so the absolute rates say as much about the
machine as about Steward; the ratios are the figure to read. ``--tmpfs`` puts the ZooKeeper
data in /dev/shm, where an fsync costs nothing: what remains is the protocol and CPU cost.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from _common import (
    TMPFS,
    Json,
    document,
    parser,
    percentile,
    progress,
    rotated,
    run_main,
    temp_zookeeper,
    wait_until,
)
from steward.errors import FencedError
from steward.ha.election import LeaderElection
from steward.ha.fencing import Fence
from steward.ha.session import Session

ROOT = "/steward-bench/fenced-writes"
VARIANTS = ("fenced", "plain_set", "plain_multi")
WARMUP_WRITES = 200

Write = Callable[[str, bytes], None]


@dataclass
class Tally:
    """The blocks of one variant, with one thread count, in one round."""

    variant: str
    threads: int
    writes: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # per write; one thread only

    @property
    def rate(self) -> float:
        return self.writes / self.seconds


def writers(client: KazooClient, fence: Fence) -> dict[str, Write]:
    def fenced(path: str, value: bytes) -> None:
        fence.transaction().set_data(path, value).commit()

    def plain_set(path: str, value: bytes) -> None:
        client.set(path, value)

    def plain_multi(path: str, value: bytes) -> None:
        txn = client.transaction()
        txn.set_data(path, value)
        result = txn.commit()[0]
        if isinstance(result, Exception):
            raise result

    return {"fenced": fenced, "plain_set": plain_set, "plain_multi": plain_multi}


def run_single(write: Write, path: str, value: bytes, writes: int) -> tuple[float, list[float]]:
    latencies = []
    clock = time.perf_counter
    started = clock()
    for _ in range(writes):
        before = clock()
        write(path, value)
        latencies.append(clock() - before)
    return clock() - started, latencies


class Crew:
    """Worker threads, one per znode, that write in lockstep blocks: a block starts when all
    are at the start barrier and ends when all reach the end barrier. The threads live as long
    as the crew, so a block costs no thread start-up."""

    def __init__(self, paths: list[str], value: bytes) -> None:
        self._value = value
        self._start = threading.Barrier(len(paths) + 1)
        self._end = threading.Barrier(len(paths) + 1)
        self._job: tuple[Write, int] | None = None
        self._failures: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._work, args=(path,), daemon=True) for path in paths
        ]
        for thread in self._threads:
            thread.start()

    @property
    def size(self) -> int:
        return len(self._threads)

    def run(self, write: Write, writes: int) -> float:
        """``writes`` in all, split evenly; wall seconds from the common start to the last."""
        self._job = (write, writes // self.size)
        self._start.wait()
        started = time.perf_counter()
        self._end.wait()
        seconds = time.perf_counter() - started
        if self._failures:
            raise self._failures[0]
        return seconds

    def close(self) -> None:
        """Release every worker, also one left mid-block by an interrupted ``run``."""
        self._start.abort()
        self._end.abort()
        for thread in self._threads:
            thread.join(timeout=10)

    def _work(self, path: str) -> None:
        try:
            while True:
                self._start.wait()
                self._write_share(path)
                self._end.wait()
        except threading.BrokenBarrierError:
            return  # closed

    def _write_share(self, path: str) -> None:
        assert self._job is not None
        write, share = self._job
        try:
            for _ in range(share):
                write(path, self._value)
        except Exception as exc:
            self._failures.append(exc)


@dataclass(frozen=True)
class Plan:
    """What to measure: ``writes`` of ``size`` bytes per variant, thread count and round."""

    size: int
    writes: int
    block: int
    threads: list[int]
    rounds: int
    tmpfs: bool

    def block_for(self, threads: int) -> int:
        """Writes per block: a multiple of ``threads``, at most ``writes``."""
        return max(threads, min(self.block, self.writes) // threads * threads)

    def parameters(self, quick: bool) -> Json:
        return {
            "writes": self.writes,
            "block": self.block,
            "size_bytes": self.size,
            "rounds": self.rounds,
            "threads": self.threads,
            "zookeeper_data": "tmpfs" if self.tmpfs else "disk",
            "quick": quick,
        }


@dataclass(frozen=True)
class Target:
    """Where and what to write: the znodes (one per thread), the value, the writers."""

    paths: list[str]
    value: bytes
    writers: dict[str, Write]

    def block(self, tally: Tally, writes: int, crew: Crew | None) -> None:
        """Run one block of ``tally``'s variant (on ``crew`` if several threads) and tally it."""
        write = self.writers[tally.variant]
        if crew is None:
            seconds, latencies = run_single(write, self.paths[0], self.value, writes)
            tally.latencies.extend(latencies)
        else:
            seconds = crew.run(write, writes)
        tally.writes += writes
        tally.seconds += seconds


def run_round(target: Target, plan: Plan, round_index: int, threads: int) -> list[Tally]:
    tallies = {variant: Tally(variant, threads) for variant in VARIANTS}
    block = plan.block_for(threads)
    crew = Crew(target.paths[:threads], target.value) if threads > 1 else None
    try:
        for turn in range(max(1, plan.writes // block)):
            for variant in rotated(VARIANTS, round_index + turn):
                target.block(tallies[variant], block, crew)
    finally:
        if crew is not None:
            crew.close()
    rates = ", ".join(f"{t.variant} {t.rate:.0f}/s" for t in tallies.values())
    progress(f"round {round_index + 1} threads={threads}: {rates}")
    return list(tallies.values())


def become_leader(session: Session) -> tuple[LeaderElection, Fence]:
    election = LeaderElection(session, "bench-writer", "benchmark").start()
    leadership = wait_until(lambda: election.leadership, 30.0, "leadership")
    return election, leadership.fence


def check_fencing(fence: Fence, path: str) -> None:
    """Make sure what was measured is a fenced write: one under another epoch is rejected."""
    stale = Fence(fence.client, fence.epoch_path, fence.epoch + 1)
    try:
        stale.transaction().set_data(path, b"stale").commit()
    except FencedError:
        progress(f"fencing verified: the write under epoch {stale.epoch} was rejected")
        return
    raise RuntimeError(f"a write under epoch {stale.epoch} was not rejected: nothing is fenced")


def run_rounds(session: Session, fence: Fence, plan: Plan) -> list[Tally]:
    """Every round for every thread count; the tallies keep their order (round by round)."""
    client = session.client
    value = b"x" * plan.size
    paths = [f"{ROOT}/bench/znode-{i}" for i in range(max(plan.threads))]
    for path in paths:
        client.create(path, value, makepath=True)
    target = Target(paths, value, writers(client, fence))
    for write in target.writers.values():
        run_single(write, paths[0], value, WARMUP_WRITES)
    progress(f"warmed up ({WARMUP_WRITES} writes per variant)")
    tallies = []
    for round_index in range(plan.rounds):
        for threads in plan.threads:
            tallies += run_round(target, plan, round_index, threads)
    if not fence.is_current():
        raise RuntimeError("the benchmark lost its leadership during the run")
    return tallies


def summarize(tallies: list[Tally], threads: int) -> Json:
    mine = [tally for tally in tallies if tally.threads == threads]
    out: Json = {}
    for variant in VARIANTS:
        of_variant = [tally for tally in mine if tally.variant == variant]
        entry: Json = {
            "writes_per_s": round(statistics.median(tally.rate for tally in of_variant)),
            "rounds_writes_per_s": [round(tally.rate) for tally in of_variant],
        }
        latencies = [x for tally in of_variant for x in tally.latencies]
        if latencies:
            entry["latency_ms"] = {
                "p50": round(percentile(latencies, 0.50) * 1000, 3),
                "p99": round(percentile(latencies, 0.99) * 1000, 3),
            }
        out[variant] = entry
    for other in ("plain_set", "plain_multi"):
        out[f"fenced_over_{other}"] = round(
            out["fenced"]["writes_per_s"] / out[other]["writes_per_s"], 3
        )
        # Paired within each round (neighbours in time): robust to drift between rounds.
        out[f"fenced_over_{other}_by_round"] = [
            round(fenced / plain, 3)
            for fenced, plain in zip(
                out["fenced"]["rounds_writes_per_s"], out[other]["rounds_writes_per_s"], strict=True
            )
        ]
    return out


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--writes", type=int, default=None, help="writes per variant and round")
    cli.add_argument("--size", type=int, default=256, help="znode value size, bytes")
    cli.add_argument("--threads", default="1,8", help="comma-separated thread counts (default 1,8)")
    cli.add_argument("--block", type=int, default=None, help="writes per turn (default 40)")
    cli.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    cli.add_argument(
        "--tmpfs", action="store_true", help=f"ZooKeeper data on {TMPFS} (no disk, no fsync)"
    )
    args = cli.parse_args()
    if args.tmpfs and not TMPFS.is_dir():
        cli.error(f"--tmpfs needs {TMPFS}, which this machine does not have")
    plan = Plan(
        size=args.size,
        writes=args.writes or (200 if args.quick else 2000),
        block=args.block or (10 if args.quick else 40),
        threads=[int(t) for t in args.threads.split(",")],
        rounds=args.rounds,
        tmpfs=args.tmpfs,
    )

    def body() -> Json:
        with temp_zookeeper("fenced-writes", TMPFS if plan.tmpfs else None) as zookeeper:
            with Session(zookeeper.connect_string, ROOT, name="bench-writer") as session:
                election, fence = become_leader(session)
                progress(f"leader, epoch {fence.epoch}; {plan.writes} writes of {plan.size} B")
                tallies = run_rounds(session, fence, plan)
                check_fencing(fence, f"{ROOT}/bench/znode-0")
                election.stop()
            results = {f"threads_{n}": summarize(tallies, n) for n in plan.threads}
            return document("fenced_writes", plan.parameters(args.quick), results, zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
