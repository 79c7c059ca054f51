"""A TaskManager whose only ZooKeeper server is a follower cut off from the ZooKeeper leader.

A follower that stops hearing from its leader keeps answering its clients from its own copy
for up to syncLimit x tickTime before it gives up, while the leader, which expires sessions,
stops receiving the touches that follower forwards. A read answered by such a follower is no
proof that the session lives (issue 23, item 2). Here the three servers each have a namespace
of their own, with ZooKeeper's sample timings (tickTime 2000, syncLimit 5: the follower answers
for up to 10 s), and:

- tm-1 reaches only follower ``f`` (blocked from the other two servers from the start);
- the JobManager and tm-2 reach the leader and the other follower, never ``f``;
- then ``f`` is cut off from the leader.

The leader expires tm-1's session about a session timeout (10 s) after the cut and the
JobManager starts a replacement on tm-2 a replacement grace later; tm-1 must have killed its
attempt before that (rule 4), as the ground truth the pipeline writes shows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.partition import truth
from e2e.partition.netns_cluster import NetnsCluster
from e2e.partition.network import Network, NetworkUnavailableError, Observer
from steward.client import Client
from steward.wire.states import JobState
from steward.zookeeper import layout
from steward.zookeeper.fourletter import ServerMode
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

log = logging.getLogger(__name__)

SESSION = 10.0
"""The cluster's session timeout (the default), in seconds."""
SAMPLE_TIMING = {"tickTime": "2000", "syncLimit": "5"}
"""ZooKeeper's own sample configuration: a cut-off follower answers for up to 10 s."""
SERVERS = ("zk1", "zk2", "zk3")
CLIENT_PORT = 2181


class Ensemble:
    """Three ZooKeeper servers, each in a namespace of its own, and who leads them."""

    def __init__(self, network: Network, observer: Observer, data_dir: Path) -> None:
        hosts = [network.add(name) for name in SERVERS]
        self._ensemble = ManagedEnsemble(
            data_dir, command_prefix=lambda n: network.exec_prefix(SERVERS[n - 1])
        )
        self._observer = observer
        observer.run(lambda: self._ensemble.start(3, CLIENT_PORT, timeout=90, host=hosts))
        self.connect_string = self._ensemble.connect_string
        modes = {s.server_id: s.mode for s in observer.run(self._ensemble.status)}
        leader = [n for n, mode in modes.items() if mode is ServerMode.LEADER]
        assert len(leader) == 1, modes
        self.leader = SERVERS[leader[0] - 1]
        self.followers = [SERVERS[n - 1] for n, mode in modes.items() if n != leader[0]]

    def stop(self) -> None:
        self._ensemble.stop()


@pytest.fixture
def ensemble_cluster(
    tmp_path: Path, cluster_id: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[NetnsCluster, Ensemble]]:
    for key, value in SAMPLE_TIMING.items():
        monkeypatch.setitem(layout.SERVER_SETTINGS, key, value)
    try:
        network = Network()
    except NetworkUnavailableError as exc:
        pytest.skip(str(exc))
    observer = Observer(network)
    ensemble: Ensemble | None = None
    cluster: NetnsCluster | None = None
    try:
        ensemble = Ensemble(network, observer, tmp_path / "zookeeper")
        cluster = NetnsCluster(
            tmp_path,
            network,
            observer,
            ensemble.connect_string,
            cluster_id,
            session_timeout=f"{SESSION:g}s",
        )
        yield cluster, ensemble
    finally:
        if cluster is not None:
            cluster.stop()
        if ensemble is not None:
            ensemble.stop()
        observer.close()
        network.close()


def _submit(cluster: NetnsCluster, tmp_path: Path, job_id: str) -> Path:
    ground = tmp_path / "truth.jsonl"
    pipeline = truth.write_pipeline(tmp_path)

    def submit(client: Client) -> None:
        client.submit(pipeline, args=[str(ground), "600", "0.1"], job_id=job_id)

    cluster.with_client(submit)
    wait_until(lambda: truth.starts(ground, job_id), 30, message="attempt started")
    wait_until(lambda: cluster.with_client(lambda c: c.job(job_id)).state is JobState.RUNNING, 30)
    return ground


def _silent(ground: Path, job: str, attempt: int, quiet: float) -> bool:
    return time.monotonic() - truth.last_seen(ground, job, attempt) > quiet


@pytest.mark.slow  # ~100 s: a 2 s-tick ensemble starts, a session timeout, a replacement
def test_taskmanager_behind_a_cut_off_follower_fences_before_the_replacement_starts(
    ensemble_cluster: tuple[NetnsCluster, Ensemble], tmp_path: Path
) -> None:
    cluster, ensemble = ensemble_cluster
    network = cluster.network
    cut_off, healthy = ensemble.followers
    for member, unreachable in (
        ("jm-1", [cut_off]),
        ("tm-1", [ensemble.leader, healthy]),
        ("tm-2", [cut_off]),
    ):
        network.add(member)
        for server in unreachable:
            network.block(member, server)
    log.warning("ensemble serving, starting the cluster")
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    ground = _submit(cluster, tmp_path, "overlap")
    cluster.start_taskmanager("tm-2")
    cluster.wait_ready(taskmanagers=2)

    # When: the network splits tm-1 and its follower from the rest (the ZooKeeper leader and
    # quorum, the JobManager, tm-2); tm-1 still reaches its follower, which still answers.
    log.warning("cluster ready, cutting")
    cut = time.monotonic()
    splits = [(cut_off, ensemble.leader), (cut_off, healthy), ("tm-1", "jm-1"), ("tm-1", "tm-2")]
    for a, b in splits:
        network.block(a, b)
    try:
        wait_until(
            lambda: len(truth.starts(ground, "overlap")) >= 2,
            4 * SESSION,
            interval=0.1,
            message="the replacement starts",
        )
        # The old attempt's end, however late it comes, for the figures.
        wait_until(lambda: _silent(ground, "overlap", 1, 1.0), 3 * SESSION, interval=0.2)
    finally:
        for a, b in splits:
            network.unblock(a, b)
    first, second = truth.starts(ground, "overlap")[:2]
    last = truth.last_seen(ground, "overlap", 1)
    log.warning(
        "follower grace: attempt 1 last ran %.2fs after the cut, the replacement started"
        " %.2fs after it",
        last - cut,
        second.t - cut,
    )
    # Then: the old attempt was dead (its last tick) before the replacement started.
    assert first.attempt == 1 and second.attempt == 2
    assert last < second.t, (
        f"two attempts ran at once: attempt 1 last ran {last - cut:.2f}s after the cut,"
        f" attempt 2 started {second.t - cut:.2f}s after it"
    )
    cluster.with_client(lambda c: c.cancel("overlap"))
