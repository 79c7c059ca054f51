"""The nemesis' network faults (``campaign --network``): a host isolated, the leader cut from
ZooKeeper, a ZooKeeper follower cut off from its leader, a TaskManager cut from the leader, a
slow and lossy link.

A mixin of :class:`chaos.nemesis.Nemesis`, which owns the state it uses (``hosts``, the sets
of cuts, blocks and throttles to heal) and the helpers it calls (``_jobmanager``,
``_taskmanager``, ``_begin``, ``_measure_failover``).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from chaos.hosts import ZK_HOSTS, Hosts
from e2e.partition.network import Network, can_drop_randomly
from steward.testing.processes import Proc
from steward.zookeeper.fourletter import ServerMode
from steward.zookeeper.managed import ManagedEnsemble

if TYPE_CHECKING:
    from chaos.nemesis import Fault

SLOW_LINK_LOSS_PERCENT = 5
"""Of a slow link's packets, the share dropped at random each way (where nftables is)."""


class NetworkFaults:
    """Network faults; what is cut, blocked or throttled is remembered for the heal."""

    hosts: Hosts | None
    ensemble: ManagedEnsemble
    _stop: threading.Event
    _cut: set[str]
    _blocks: set[tuple[str, str]]
    _throttled: set[str]

    def _network(self) -> Network:
        assert self.hosts is not None
        return self.hosts.network

    def _cut_for(self, rng: random.Random, proc: Proc | None, kind: str) -> Fault | None:
        if proc is None:
            return None
        return self._network_fault(
            rng,
            kind,
            proc.id,
            apply=lambda: self._cut_host(proc.id),
            undo=lambda: self._heal_host(proc.id),
            leader=proc.id if kind == "isolate_leader" else None,
        )

    def _isolate_leader(self, rng: random.Random) -> Fault | None:
        return self._cut_for(rng, self._jobmanager(rng, leader=True), "isolate_leader")

    def _isolate_standby(self, rng: random.Random) -> Fault | None:
        return self._cut_for(rng, self._jobmanager(rng, leader=False), "isolate_standby")

    def _isolate_taskmanager(self, rng: random.Random) -> Fault | None:
        return self._cut_for(rng, self._taskmanager(rng), "isolate_taskmanager")

    def _leader_from_zookeeper(self, rng: random.Random) -> Fault | None:
        """The leader reaches the TaskManagers (their heartbeats reach it) but not ZooKeeper:
        its session expires and its fenced writes fail; a standby must take over, and the
        TaskManagers' attempts, in their own sessions, keep running to be adopted."""
        proc = self._jobmanager(rng, leader=True)
        if proc is None:
            return None
        pairs = [(proc.id, server) for server in ZK_HOSTS]
        return self._network_fault(
            rng,
            "leader_from_zookeeper",
            proc.id,
            apply=lambda: self._block_all(pairs),
            undo=lambda: self._unblock_all(pairs),
            leader=proc.id,
        )

    def _follower_cut_off(self, rng: random.Random) -> Fault | None:
        """A ZooKeeper follower loses the ZooKeeper leader and the other follower, and a
        TaskManager reaches only that follower: the follower answers reads for syncLimit x
        tickTime while the leader expires the TaskManager's session; the TaskManager must
        kill its attempts before a replacement starts (rule 4; issue 23)."""
        tm = self._taskmanager(rng)
        modes = {s.server_id: s.mode for s in self.ensemble.status()}
        followers = sorted(n for n, mode in modes.items() if mode is ServerMode.FOLLOWER)
        if tm is None or not followers:
            return None
        follower = ZK_HOSTS[rng.choice(followers) - 1]
        others = [server for server in ZK_HOSTS if server != follower]
        pairs = [(follower, server) for server in others] + [(tm.id, s) for s in others]
        return self._network_fault(
            rng,
            "follower_cut_off",
            f"{tm.id}/{follower}",
            apply=lambda: self._block_all(pairs),
            undo=lambda: self._unblock_all(pairs),
        )

    def _taskmanager_from_leader(self, rng: random.Random) -> Fault | None:
        """A TaskManager keeps its ZooKeeper session (and its leases) but its heartbeats do
        not reach the leader: the leader must not start a second attempt while the lease
        stands (rule 3)."""
        leader = self._jobmanager(rng, leader=True)
        tm = self._taskmanager(rng)
        if leader is None or tm is None:
            return None
        pair = (tm.id, leader.id)
        return self._network_fault(
            rng,
            "taskmanager_from_leader",
            f"{tm.id}/{leader.id}",
            apply=lambda: self._block(pair),
            undo=lambda: self._unblock(pair),
        )

    def _slow_link(self, rng: random.Random) -> Fault | None:
        members = [
            p for p in self.cluster.current("jobmanager") + self.cluster.current("taskmanager")
        ]
        if not members:
            return None
        target = rng.choice(members).id
        return self._network_fault(
            rng,
            "slow_link",
            target,
            apply=lambda: self._throttle(target),
            undo=lambda: self._unthrottle(target),
        )

    def _network_fault(
        self,
        rng: random.Random,
        kind: str,
        target: str,
        *,
        apply: Callable[[], None],
        undo: Callable[[], None],
        leader: str | None = None,
    ) -> Fault:
        pause = rng.uniform(*self.settings.pause_factor) * self.settings.session_timeout
        fault = self._begin(kind, target, pause_s=round(pause, 2))
        apply()
        try:
            until = fault.start_t + pause
            if leader is not None:
                self._measure_failover(kind, leader, fault.start_t, until=until, restart=None)
            remaining = until - time.monotonic()
            if remaining > 0:
                self._stop.wait(remaining)  # the pause drawn from the seeded RNG
        finally:
            undo()
        fault.end_t = time.monotonic()
        return fault

    def _cut_host(self, name: str) -> None:
        self._network().cut(name)
        self._cut.add(name)

    def _heal_host(self, name: str) -> None:
        self._network().heal(name)
        self._cut.discard(name)

    def _block(self, pair: tuple[str, str]) -> None:
        self._network().block(*pair)
        self._blocks.add(pair)

    def _unblock(self, pair: tuple[str, str]) -> None:
        self._network().unblock(*pair)
        self._blocks.discard(pair)

    def _block_all(self, pairs: list[tuple[str, str]]) -> None:
        for pair in pairs:
            self._block(pair)

    def _unblock_all(self, pairs: list[tuple[str, str]]) -> None:
        for pair in pairs:
            self._unblock(pair)

    def _throttle(self, name: str) -> None:
        loss = SLOW_LINK_LOSS_PERCENT if can_drop_randomly() else 0
        self._network().throttle(name, loss_percent=loss)
        self._throttled.add(name)

    def _unthrottle(self, name: str) -> None:
        self._network().unthrottle(name)
        self._throttled.discard(name)

    def _heal_network(self) -> None:
        if self.hosts is None:
            return
        for name in list(self._cut):
            with contextlib.suppress(RuntimeError):
                self._heal_host(name)
        for pair in list(self._blocks):
            with contextlib.suppress(RuntimeError):
                self._unblock(pair)
        for name in list(self._throttled):
            self._unthrottle(name)
