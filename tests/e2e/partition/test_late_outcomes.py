"""A finished attempt's outcome survives a partition, or its TaskManager's death, right after it.

The pipeline's first attempt waits for a gate file the test creates, then returns; every later
attempt runs for minutes. So a job that ends FINISHED soon after the fault ended with the first
attempt's own result, and a replacement that started was cancelled for it.

- TaskManager unplugged, then its attempt finishes: the lease cannot be released nor the
  outcome sent; at its session's expiry the leader counts the attempt LOST and starts a
  replacement elsewhere. Once healed, the TaskManager sends FINISHED late: the leader cancels
  the replacement and records the job FINISHED with the first attempt's value;
- the same with a restart delay that holds the replacement back past the heal: the late FINISHED
  finishes the job at once, and nothing runs a second time;
- the TaskManager reaches ZooKeeper but not the leader, its attempt finishes (the lease is
  released) and the TaskManager is SIGKILLed before any report got through: at its session's
  expiry the leader finds the outcome recorded with the lease's release and finishes the job
  with it, without a replacement.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from e2e.partition import truth
from e2e.partition.netns_cluster import NetnsCluster
from steward.client import Client
from steward.ha.layout import Layout
from steward.wire.rest import JobView
from steward.wire.states import AttemptState, JobState
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper

SESSION = 4.0
"""The clusters' session timeout (the fixture's default), in seconds."""

PIPELINE = """
import json, os, time

def _log(ctx, path, event):
    line = {"job": ctx.job_id, "attempt": ctx.attempt, "pid": os.getpid(), "event": event,
            "t": time.monotonic()}
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\\n")

def main(ctx):
    path, gate = ctx.args[0], ctx.args[1]
    _log(ctx, path, "start")
    if ctx.attempt == 1:
        while not os.path.exists(gate):
            time.sleep(0.02)
    else:
        for _ in range(3000):
            time.sleep(0.1)
            _log(ctx, path, "tick")
    _log(ctx, path, "stop")
    return {"pid": os.getpid(), "attempt": ctx.attempt}
"""


def _job(cluster: NetnsCluster, job_id: str) -> JobView:
    return cluster.with_client(lambda client: client.job(job_id))


def _submit_gated(
    cluster: NetnsCluster, tmp_path: Path, job_id: str, restart: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    ground, gate = tmp_path / "truth.jsonl", tmp_path / "gate"
    pipeline = tmp_path / "gated_pipeline.py"
    pipeline.write_text(PIPELINE)

    def submit(client: Client) -> None:
        client.submit(pipeline, args=[str(ground), str(gate)], job_id=job_id, restart=restart)

    cluster.with_client(submit)
    wait_until(lambda: truth.starts(ground, job_id), 30, message="attempt 1 started")
    wait_until(lambda: _job(cluster, job_id).state is JobState.RUNNING, 30)
    return ground, gate


def _stopped(ground: Path, job_id: str, attempt: int) -> list[truth.Event]:
    return [
        e
        for e in truth.read(ground)
        if e.job == job_id and e.attempt == attempt and e.event == "stop"
    ]


def _terminal(cluster: NetnsCluster, job_id: str) -> JobView | None:
    view = _job(cluster, job_id)
    return view if view.state.is_terminal else None


def _lease_gone(cluster: NetnsCluster, job_id: str) -> bool:
    root = f"{ZK_TEST_ROOT}/{cluster.settings['high-availability.cluster-id']}"
    quorum = cluster.settings["high-availability.zookeeper.quorum"]

    # The cluster's ZooKeeper credential: since 3.9, exists() needs READ on the znode too.
    options = cluster.zookeeper_access.kazoo_options()

    def ask() -> bool:
        client = KazooClient(hosts=quorum, timeout=10, **options)
        client.start(timeout=15)
        try:
            return client.exists(Layout(root).execution(job_id)) is None
        finally:
            client.stop()
            client.close()

    return cluster.call(ask)


def _sever(cluster: NetnsCluster, a: str, b: str) -> None:
    """Block ``a`` from ``b`` and drop ``a``'s established connections to ``b`` too: a
    blackhole route alone let a kept-alive heartbeat connection through now and then."""
    cluster.network.block(a, b)
    address = cluster.network.members[b]
    ss = ["ss", "-K", "dst", address]
    subprocess.run([*cluster.network.exec_prefix(a), *ss], check=False, capture_output=True)


def _result(cluster: NetnsCluster, job_id: str) -> Any:
    return cluster.with_client(lambda c: c.wait(job_id, timeout=30), timeout=30)


@pytest.mark.slow  # ~25 s: one session timeout, a replacement, a heal
def test_outcome_sent_after_a_partition_wins_over_the_lost_verdict(
    partitioned: NetnsCluster, tmp_path: Path
) -> None:
    cluster = partitioned
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    ground, gate = _submit_gated(cluster, tmp_path, "late")
    assert _job(cluster, "late").attempts[-1].taskmanager == "tm-1"
    cluster.start_taskmanager("tm-2")
    cluster.wait_ready(taskmanagers=2)

    # When: tm-1 is unplugged, its attempt finishes a moment later, and the leader, at tm-1's
    # session expiry, counts the attempt lost and starts a replacement on tm-2 ...
    cluster.network.cut("tm-1")
    try:
        gate.touch()
        wait_until(lambda: _stopped(ground, "late", 1), 10, message="attempt 1 returned")
        wait_until(
            lambda: len(truth.starts(ground, "late")) >= 2,
            5 * SESSION,
            message="the replacement starts",
        )
    finally:
        cluster.network.heal("tm-1")

    # Then: once tm-1 is back, its late FINISHED wins: the job ends with attempt 1's value,
    # and the replacement is cancelled.
    view = wait_until(lambda: _terminal(cluster, "late"), 6 * SESSION, message="job ends")
    first, second = truth.starts(ground, "late")[:2]
    assert (first.attempt, second.attempt) == (1, 2)
    assert _stopped(ground, "late", 1)[0].t < second.t, "two attempts ran at once"
    assert view.state is JobState.FINISHED, view
    result = _result(cluster, "late")
    assert result.value == {"pid": first.pid, "attempt": 1}, result
    states = {a.number: a.state for a in view.attempts}
    assert states[1] is AttemptState.FINISHED and states[2] is AttemptState.CANCELED, states
    assert not _stopped(ground, "late", 2), "the replacement was not cancelled"
    cluster.check_alive()


@pytest.mark.slow  # ~20 s: one session timeout, a heal
def test_outcome_sent_after_a_partition_finishes_a_job_waiting_to_restart(
    partitioned: NetnsCluster, tmp_path: Path
) -> None:
    cluster = partitioned
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    restart = {"kind": "fixed-delay", "attempts": 3, "delay": 120.0}
    ground, gate = _submit_gated(cluster, tmp_path, "waiting", restart=restart)

    # When: tm-1 is unplugged, its attempt finishes, the leader counts it lost at the session's
    # expiry and waits out the restart delay; then tm-1 is healed.
    cluster.network.cut("tm-1")
    try:
        gate.touch()
        wait_until(lambda: _stopped(ground, "waiting", 1), 10, message="attempt 1 returned")
        wait_until(
            lambda: _job(cluster, "waiting").state is JobState.RESTARTING,
            5 * SESSION,
            message="attempt 1 counted lost",
        )
    finally:
        cluster.network.heal("tm-1")

    # Then: the late FINISHED finishes the job at once, with attempt 1's value.
    view = wait_until(lambda: _terminal(cluster, "waiting"), 6 * SESSION, message="job ends")
    assert view.state is JobState.FINISHED, view
    starts = truth.starts(ground, "waiting")
    assert [s.attempt for s in starts] == [1], f"the job ran again: {starts}"
    result = _result(cluster, "waiting")
    assert result.value == {"pid": starts[0].pid, "attempt": 1}, result
    assert [(a.number, a.state) for a in view.attempts] == [(1, AttemptState.FINISHED)]
    cluster.check_alive()


def test_outcome_recorded_with_the_lease_release_survives_the_taskmanager(
    partitioned: NetnsCluster, tmp_path: Path
) -> None:
    cluster = partitioned
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    tm1 = cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    ground, gate = _submit_gated(cluster, tmp_path, "durable")
    cluster.start_taskmanager("tm-2")
    cluster.wait_ready(taskmanagers=2)

    # When: tm-1 can no longer reach the leader (ZooKeeper still can), its attempt finishes
    # and releases the lease, and tm-1 dies before any report got through.
    _sever(cluster, "tm-1", "jm-1")
    try:
        gate.touch()
        wait_until(lambda: _lease_gone(cluster, "durable"), 10, message="lease released")
        tm1.signal(signal.SIGKILL)
        tm1.popen.wait(10)
    finally:
        cluster.network.unblock("tm-1", "jm-1")

    # Then: at tm-1's session expiry the leader settles the attempt from the recorded outcome.
    view = wait_until(lambda: _terminal(cluster, "durable"), 4 * SESSION, message="job ends")
    assert view.state is JobState.FINISHED, view
    starts = truth.starts(ground, "durable")
    assert [s.attempt for s in starts] == [1], f"the job ran again: {starts}"
    result = _result(cluster, "durable")
    assert result.value == {"pid": starts[0].pid, "attempt": 1}, result
    assert [(a.number, a.state) for a in view.attempts] == [(1, AttemptState.FINISHED)]
    assert os.path.exists(gate)
    cluster.check_alive()
