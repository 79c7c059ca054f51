"""The spare pool's bookkeeping, with real processes standing in for Spark spares.

The pool's logic (how many spares, replacing, killing extras, backing off, handing out) has
nothing to do with Spark, so these tests give the pool a stand-in "python": a small script
that speaks the spare's side of the protocol (``ready`` on the events fd, then it lives until
stdin closes), or fails at once. Real Spark spares are tested in
tests/integration/taskmanager/test_taskmanager_spares.py.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.taskmanager.spares import SparePool
from support import pid_alive, wait_until

FAKE_SPARE = f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv[1:]
fd = int(args[args.index("--events-fd") + 1])
if os.environ.get("FAKE_SPARE") == "fail":
    error = {{"type": "steward.wire.runner_protocol.WarmupError", "message": "no JVM"}}
    failed = {{"schema": 1, "event": "failed", "at": time.time(), "error": error}}
    os.write(fd, json.dumps(failed).encode() + b"\\n")
    sys.exit(1)
os.write(fd, json.dumps({{"schema": 1, "event": "ready", "at": time.time(),
    "pid": os.getpid(), "seconds": 0.0}}).encode() + b"\\n")
while os.read(0, 4096):
    pass
"""

DEADLINE = 30.0
REPLACE_DELAY = 0.5


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    path = tmp_path / "fake-python"
    path.write_text(FAKE_SPARE)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def ready(pool: SparePool, count: int) -> list[int]:
    """The pool's ready spares' pids, once there are exactly ``count`` of them."""
    return wait_until(
        lambda: pids if len(pids := pool.ready_pids()) == count else None,
        DEADLINE,
        message=f"{count} ready spares",
    )


class Slots:
    def __init__(self, free: int) -> None:
        self.free = free

    def __call__(self) -> int:
        return self.free


@pytest.fixture
def pool_of(tmp_path: Path, fake_python: Path) -> Iterator[type[SparePool]]:
    pools: list[SparePool] = []

    def _pool(limit: int, slots: Slots, env: dict[str, str] | None = None) -> SparePool:
        pool = SparePool(
            limit=limit,
            spark_master="local[1]",
            deadman_timeout=5.0,
            folder=tmp_path / ".spares",
            free_slots=slots,
            python=str(fake_python),
            env=env,
            replace_delay=REPLACE_DELAY,
        )
        pools.append(pool)
        return pool.start()

    yield _pool  # type: ignore[misc]
    for pool in pools:
        pool.stop()


def test_keeps_limit_spares_bounded_by_the_free_slots_and_kills_extras(pool_of) -> None:  # type: ignore[no-untyped-def]
    slots = Slots(free=3)
    pool = pool_of(2, slots)
    pids = ready(pool, 2)

    slots.free = 1
    pool.wake()

    left = ready(pool, 1)
    assert left[0] in pids
    gone = next(pid for pid in pids if pid != left[0])
    wait_until(lambda: not pid_alive(gone), DEADLINE, message="the extra spare is killed")


def test_take_hands_out_a_ready_spare_and_a_new_one_replaces_it(pool_of) -> None:  # type: ignore[no-untyped-def]
    pool = pool_of(1, Slots(free=2))
    first = wait_until(pool.ready_pids, DEADLINE)[0]

    spare = pool.take({"spark.sql.shuffle.partitions": "2"}, "local[1]")
    taken = time.monotonic()
    pool.wake()

    assert spare is not None and spare.pid == first
    assert first not in pool.ready_pids(), "a spare serves one attempt"
    replacement = wait_until(pool.ready_pids, DEADLINE)[0]
    assert time.monotonic() - taken >= REPLACE_DELAY, "the replacement waits its delay"
    assert replacement != first and pid_alive(first), "the handed-out spare is the caller's"
    spare.kill()
    assert spare.wait_gone(DEADLINE)


def test_take_refuses_a_job_that_needs_a_cold_runner_and_keeps_the_spare(pool_of) -> None:  # type: ignore[no-untyped-def]
    pool = pool_of(1, Slots(free=1))
    first = wait_until(pool.ready_pids, DEADLINE)[0]

    assert pool.take({"spark.driver.memory": "4g"}, "local[1]") is None
    assert pool.take({}, "local[4]") is None
    assert pool.ready_pids() == [first]


def test_spares_that_cannot_warm_are_retried_with_a_backoff_not_in_a_loop(
    pool_of,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    pool = pool_of(1, Slots(free=1), env={**os.environ, "FAKE_SPARE": "fail"})
    spawned = tmp_path / ".spares"

    def tries() -> int:
        return len(list(spawned.glob("spare-*")))

    wait_until(lambda: tries() >= 1, DEADLINE, message="a first try")
    first = time.monotonic()
    wait_until(lambda: tries() >= 3, DEADLINE, message="a third try")

    # Waits of 1 s then 2 s between tries; without them the pool would retry every 0.5 s.
    assert time.monotonic() - first >= 2.5
    assert pool.ready_pids() == []
    assert pool.take({}, "local[1]") is None


def test_stop_kills_every_spare_not_handed_out(pool_of) -> None:  # type: ignore[no-untyped-def]
    pool = pool_of(2, Slots(free=2))
    pids = ready(pool, 2)

    pool.stop()

    assert not any(pid_alive(pid) for pid in pids)
    assert pool.spares() == []
