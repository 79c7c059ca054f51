"""The nemesis: faults injected at random (seeded) while the workload runs, and healed.

Two lanes, each a thread with its own seeded RNG, so a process fault can coincide with an
infrastructure fault but two ZooKeeper faults never do (a quorum always survives):

- processes: SIGKILL of the leader, a standby, a TaskManager or a runner; SIGSTOP then SIGCONT
  (after a pause around the session timeout) of the leader, a standby or a TaskManager. A
  killed member is restarted as itself after a random delay, so the cluster keeps its size.
  One TaskManager kill is timed: the moment an attempt's pipeline returned, so it lands
  between the attempt's end, its lease's release (with its outcome record) and its report.
- infrastructure: stop/start or freeze/thaw of one ZooKeeper server; the blob storage made
  read-only (a read-only bind mount: chmod does not stop root) for a few seconds.
- around a failover (chaos/failover_faults.py, in the processes' lane): the storage stalled
  and the leader killed during the stall (``--storage s3``); a submission through a standby
  whose leader stored it and was killed before answering (the forward cut after the store).
- network (``campaign --network``: every member on a host of its own, chaos/hosts.py): a host
  isolated (the leader's, a standby's, a TaskManager's); the leader cut from ZooKeeper but not
  from the TaskManagers; a TaskManager cut from the leader but not from ZooKeeper; a slow,
  lossy link (a token bucket, and random drops with nftables: this kernel has no netem). Each
  lasts 0.5 to 2 session timeouts, then heals.

Without ``--network`` every process shares one loopback interface and network faults are not
injected; the summary says so.

Every fault is recorded (kind, target, start and end on the monotonic clock), and so is every
failover: from the leader's kill or freeze until another JobManager answers /readyz as leader.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from chaos.cluster import ChaosCluster, StorageFreezer
from chaos.failover_faults import FailoverFaults, Stallable
from chaos.hosts import Hosts
from chaos.network_faults import NetworkFaults
from chaos.truth import Attempt, DeathWatcher
from chaos.workload import Workload
from steward.errors import StewardError
from steward.testing.processes import Proc
from steward.zookeeper.managed import ManagedEnsemble

log = logging.getLogger(__name__)

PROCESS_KINDS = (
    "kill_leader",
    "kill_standby",
    "kill_taskmanager",
    "kill_taskmanager_after_finish",
    "restart_taskmanager",
    "kill_runner",
    "freeze_leader",
    "freeze_standby",
    "freeze_taskmanager",
)
INFRA_KINDS = ("zk_stop", "zk_freeze", "storage_readonly")
FAILOVER_KINDS = ("storage_stall_failover", "forward_cut_after_store")
NETWORK_KINDS = (
    "isolate_leader",
    "isolate_standby",
    "isolate_taskmanager",
    "leader_from_zookeeper",
    "taskmanager_from_leader",
    "slow_link",
    "follower_cut_off",
)
NOT_INJECTED = {
    "network_cut": "not injected: every process shares the loopback interface of one network"
    " namespace; isolating one process needs a namespace per process (not cheap here)"
}


@dataclass(frozen=True)
class NemesisSettings:
    session_timeout: float
    mean_interval: float = 8.0
    """Mean time between two faults of one lane (exponentially distributed)."""
    restart_delay: tuple[float, float] = (0.5, 5.0)
    pause_factor: tuple[float, float] = (0.5, 2.0)
    """A freeze lasts this many session timeouts."""
    zk_down: tuple[float, float] = (2.0, 12.0)
    storage_down: tuple[float, float] = (2.0, 8.0)
    storage_stall: tuple[float, float] = (3.0, 20.0)
    """An S3 store's stall: below and above botocore's read timeout (5 s)."""
    kinds: tuple[str, ...] = PROCESS_KINDS + INFRA_KINDS
    cycle: bool = False
    """Each lane injects every one of its kinds once per round (in a seeded order) instead of
    drawing each fault at random."""


@dataclass
class Fault:
    kind: str
    target: str
    start_t: float
    end_t: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self, origin: float = 0.0) -> dict[str, Any]:
        """The fault as JSON, its times in seconds since ``origin`` (monotonic)."""
        return {
            "kind": self.kind,
            "target": self.target,
            "start_s": round(self.start_t - origin, 3),
            "end_s": None if self.end_t is None else round(self.end_t - origin, 3),
            **self.detail,
        }


@dataclass
class Failover:
    trigger: str
    old_leader: str
    new_leader: str | None
    seconds: float | None
    """None: no other leader answered /readyz within the deadline (or the freeze ended)."""


class Nemesis(FailoverFaults, NetworkFaults):
    def __init__(
        self,
        cluster: ChaosCluster,
        ensemble: ManagedEnsemble,
        *,
        storage: StorageFreezer,
        watcher: DeathWatcher,
        seed: int,
        settings: NemesisSettings,
        report: Callable[[str], None],
        hosts: Hosts | None = None,
        stall: Stallable | None = None,
        workload: Workload | None = None,
    ) -> None:
        """``stall``: the S3 store (``--storage s3``) that ``storage_stall_failover`` freezes;
        ``workload``: whose jobs ``forward_cut_after_store`` submits through a standby."""
        self.cluster = cluster
        self.stall = stall
        self.workload = workload
        self.ensemble = ensemble
        self.storage = storage
        self.watcher = watcher
        self.settings = settings
        self.hosts = hosts
        self.report = report
        self.seed = seed
        self.faults: list[Fault] = []
        self.failovers: list[Failover] = []
        self.skipped: dict[str, str] = {} if hosts is not None else dict(NOT_INJECTED)
        self._cut: set[str] = set()
        self._blocks: set[tuple[str, str]] = set()
        self._throttled: set[str] = set()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._frozen: set[int] = set()
        self._threads: list[threading.Thread] = []
        self._skip_unavailable(storage)

    def _skip_unavailable(self, storage: StorageFreezer) -> None:
        kinds = self.settings.kinds
        if "storage_readonly" in kinds and self.stall is not None:
            self.skipped["storage_readonly"] = (
                "not injected: the storage is s3://; a read-only mount is a file:// store's"
                " fault (an S3 store stalls instead: storage_stall_failover)"
            )
        elif "storage_readonly" in kinds:
            reason = storage.available()
            if reason is not None:
                self.skipped["storage_readonly"] = f"not injected: {reason}"
        if "storage_stall_failover" in kinds and self.stall is None:
            self.skipped["storage_stall_failover"] = (
                "not injected: needs --storage s3 (a file:// store that stops answering needs"
                " FUSE; an S3 server stops answering with SIGSTOP)"
            )
        if "forward_cut_after_store" in kinds and self.workload is None:
            self.skipped["forward_cut_after_store"] = "not injected: no workload to submit"

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        lanes = {
            "processes": [
                k
                for k in PROCESS_KINDS + FAILOVER_KINDS
                if k in self.settings.kinds and k not in self.skipped
            ],
            "infrastructure": [
                k for k in INFRA_KINDS if k in self.settings.kinds and k not in self.skipped
            ],
            "network": [
                k for k in NETWORK_KINDS if k in self.settings.kinds and self.hosts is not None
            ],
        }
        for index, (lane, kinds) in enumerate(lanes.items()):
            if kinds:
                rng = random.Random(self.seed * 1000 + index)
                thread = threading.Thread(
                    target=self._lane, args=(rng, kinds), name=f"nemesis-{lane}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def stop(self) -> None:
        """Stop injecting, wait for the faults under way to heal, then heal whatever is left."""
        self._stop.set()
        for thread in self._threads:
            thread.join(120)
        self.heal()

    def heal(self) -> None:
        self._heal_network()
        for pid in list(self._frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
            self._frozen.discard(pid)
        self.storage.thaw()
        if self.stall is not None:
            self.stall.thaw()
        for status in self.ensemble.status():
            if status.frozen:
                self.ensemble.thaw_server(status.server_id)
            elif not status.running:
                self.ensemble.start_server(status.server_id, wait=False)
        self.ensemble.wait_serving(timeout=120.0)
        for proc in list(self.cluster.procs):
            latest = self.cluster.member(proc.id)
            if latest is proc and not proc.alive():
                self.cluster.restart(proc)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for fault in self.faults:
            counts[fault.kind] = counts.get(fault.kind, 0) + 1
        return counts

    # ------------------------------------------------------------------ the lanes

    def _lane(self, rng: random.Random, kinds: list[str]) -> None:
        due: list[str] = []
        while not self._stop.wait(
            min(4 * self.settings.mean_interval, rng.expovariate(1.0 / self.settings.mean_interval))
        ):
            kind = self._draw(rng, kinds, due)
            try:
                fault = getattr(self, f"_{kind}")(rng)
            except (StewardError, OSError, RuntimeError) as exc:  # RuntimeError: `ip`, `tc`
                self.errors.append(f"{kind}: {exc!r}")
                self.report(f"fault {kind} could not be injected: {exc!r}")
                continue
            if fault is None and self.settings.cycle:
                due.append(kind)  # not injected (no leader ready, say): it stays due
            if fault is not None:
                with self._lock:
                    self.faults.append(fault)
                took = (fault.end_t or fault.start_t) - fault.start_t
                self.report(f"fault {fault.kind} {fault.target} healed after {took:.1f}s")

    def _draw(self, rng: random.Random, kinds: list[str], due: list[str]) -> str:
        """The next kind: drawn at random, or with ``cycle`` the next of a seeded shuffle of
        every kind (a short campaign then injects each kind, whatever the timing)."""
        if not self.settings.cycle:
            return rng.choice(kinds)
        if not due:
            due.extend(rng.sample(kinds, len(kinds)))
        return due.pop()

    def _begin(self, kind: str, target: str, **detail: Any) -> Fault:
        self.report(f"fault {kind} {target} {detail or ''}".rstrip())
        return Fault(kind, target, time.monotonic(), detail=dict(detail))

    # ------------------------------------------------------------------ process faults

    def _jobmanager(self, rng: random.Random, leader: bool) -> Proc | None:
        leader_id = self.cluster.ready_leader()
        if leader_id is None:
            return None  # a failover is under way: try again later
        members = [p for p in self.cluster.current("jobmanager") if p.alive()]
        if leader:
            return next((p for p in members if p.id == leader_id), None)
        standbys = [p for p in members if p.id != leader_id]
        return rng.choice(standbys) if standbys else None

    def _taskmanager(self, rng: random.Random) -> Proc | None:
        members = [p for p in self.cluster.current("taskmanager") if p.alive()]
        return rng.choice(members) if members else None

    def _kill_leader(self, rng: random.Random) -> Fault | None:
        return self._kill(rng, self._jobmanager(rng, leader=True), "kill_leader")

    def _kill_standby(self, rng: random.Random) -> Fault | None:
        return self._kill(rng, self._jobmanager(rng, leader=False), "kill_standby")

    def _kill_taskmanager(self, rng: random.Random) -> Fault | None:
        return self._kill(rng, self._taskmanager(rng), "kill_taskmanager")

    def _restart_taskmanager(self, rng: random.Random) -> Fault | None:
        """SIGKILL a TaskManager and start it again at once under the same id: the new process
        registers while the leader may still hold the old one's attempts (issue 11, item 2)."""
        return self._kill(rng, self._taskmanager(rng), "restart_taskmanager", delay=0.0)

    def _kill_taskmanager_after_finish(self, rng: random.Random) -> Fault | None:
        """SIGKILL the TaskManager of the next attempt whose pipeline returns (its stop line),
        at once; None if none returns within a few fault intervals."""
        deadline = time.monotonic() + 4 * self.settings.mean_interval
        hosts: dict[int, tuple[Attempt, Proc]] = {}
        while not self._stop.is_set() and time.monotonic() < deadline:
            hosts.update(self._hosts_of_running_attempts(known=hosts))
            for attempt, proc in hosts.values():
                if attempt.stop_t is not None and proc.alive():
                    return self._kill(rng, proc, "kill_taskmanager_after_finish")
            time.sleep(0.01)
        return None

    def _hosts_of_running_attempts(
        self, known: dict[int, tuple[Attempt, Proc]]
    ) -> dict[int, tuple[Attempt, Proc]]:
        """Running attempts not in ``known``, by runner pid, with their TaskManager (the
        runner's parent process)."""
        managers = {p.pid: p for p in self.cluster.current("taskmanager") if p.alive()}
        found: dict[int, tuple[Attempt, Proc]] = {}
        for attempt in self.watcher.running():
            if attempt.pid in known or attempt.stop_t is not None:
                continue
            with contextlib.suppress(psutil.Error):
                host = managers.get(psutil.Process(attempt.pid).ppid())
                if host is not None:
                    found[attempt.pid] = (attempt, host)
        return found

    def _kill(
        self, rng: random.Random, proc: Proc | None, kind: str, delay: float | None = None
    ) -> Fault | None:
        if proc is None:
            return None
        drawn = rng.uniform(*self.settings.restart_delay)  # drawn always: the seed's sequence
        delay = drawn if delay is None else delay
        fault = self._begin(kind, proc.id, restart_after_s=round(delay, 2))
        proc.signal(signal.SIGKILL)
        proc.popen.wait(10)
        restart_at = fault.start_t + delay
        if kind == "kill_leader":
            self._measure_failover(
                kind, proc.id, fault.start_t, until=None, restart=(proc, restart_at)
            )
        remaining = restart_at - time.monotonic()
        if remaining > 0:
            self._stop.wait(remaining)  # the fault's own duration, drawn from the seeded RNG
        if self.cluster.member(proc.id) is proc:
            self.cluster.restart(proc)
        fault.end_t = time.monotonic()
        return fault

    def _kill_runner(self, rng: random.Random) -> Fault | None:
        running = [a for a in self.watcher.running() if a.stop_t is None]
        if not running:
            return None
        attempt = rng.choice(running)
        fault = self._begin("kill_runner", f"{attempt.job}#{attempt.attempt} pid {attempt.pid}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(attempt.pid, signal.SIGKILL)
        fault.end_t = time.monotonic()
        return fault

    def _freeze_leader(self, rng: random.Random) -> Fault | None:
        return self._freeze(rng, self._jobmanager(rng, leader=True), "freeze_leader")

    def _freeze_standby(self, rng: random.Random) -> Fault | None:
        return self._freeze(rng, self._jobmanager(rng, leader=False), "freeze_standby")

    def _freeze_taskmanager(self, rng: random.Random) -> Fault | None:
        return self._freeze(rng, self._taskmanager(rng), "freeze_taskmanager")

    def _freeze(self, rng: random.Random, proc: Proc | None, kind: str) -> Fault | None:
        if proc is None:
            return None
        pause = rng.uniform(*self.settings.pause_factor) * self.settings.session_timeout
        fault = self._begin(kind, proc.id, pause_s=round(pause, 2))
        self._frozen.add(proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            until = fault.start_t + pause
            if kind == "freeze_leader":
                self._measure_failover(kind, proc.id, fault.start_t, until=until, restart=None)
            remaining = until - time.monotonic()
            if remaining > 0:
                self._stop.wait(remaining)  # the pause drawn from the seeded RNG
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
            self._frozen.discard(proc.pid)
        fault.end_t = time.monotonic()
        return fault

    def _measure_failover(
        self,
        trigger: str,
        old: str,
        since: float,
        until: float | None,
        restart: tuple[Proc, float] | None,
    ) -> None:
        """Poll the other JobManagers until one answers /readyz as the leader."""
        deadline = since + 20 * self.settings.session_timeout
        if until is not None:
            deadline = min(deadline, until)
        while time.monotonic() < deadline:
            new = self.cluster.ready_leader(exclude=old)
            if new is not None:
                seconds = time.monotonic() - since
                self.failovers.append(Failover(trigger, old, new, seconds))
                self.report(f"failover {old} -> {new} in {seconds:.2f}s")
                return
            if restart is not None and time.monotonic() >= restart[1]:
                proc, _ = restart
                if self.cluster.member(proc.id) is proc:
                    self.cluster.restart(proc)
            time.sleep(0.05)
        if until is None:
            self.failovers.append(Failover(trigger, old, None, None))
            self.report(f"failover after {trigger} of {old}: no new leader in time")

    # ------------------------------------------------------------------ infrastructure faults

    def _zk_stop(self, rng: random.Random) -> Fault:
        server = rng.randint(1, 3)
        down = rng.uniform(*self.settings.zk_down)
        fault = self._begin("zk_stop", f"zookeeper-{server}", down_s=round(down, 2))
        self.ensemble.stop_server(server)
        try:
            self._stop.wait(down)
        finally:
            self.ensemble.start_server(server, wait=True, timeout=120.0)
        fault.end_t = time.monotonic()
        return fault

    def _zk_freeze(self, rng: random.Random) -> Fault:
        server = rng.randint(1, 3)
        pause = rng.uniform(*self.settings.pause_factor) * self.settings.session_timeout
        fault = self._begin("zk_freeze", f"zookeeper-{server}", pause_s=round(pause, 2))
        self.ensemble.freeze_server(server)
        try:
            self._stop.wait(pause)
        finally:
            self.ensemble.thaw_server(server)
        self.ensemble.wait_serving(timeout=120.0)
        fault.end_t = time.monotonic()
        return fault

    def _storage_readonly(self, rng: random.Random) -> Fault:
        down = rng.uniform(*self.settings.storage_down)
        fault = self._begin("storage_readonly", str(self.storage.path), down_s=round(down, 2))
        self.storage.freeze()
        try:
            self._stop.wait(down)
        finally:
            self.storage.thaw()
        fault.end_t = time.monotonic()
        return fault
