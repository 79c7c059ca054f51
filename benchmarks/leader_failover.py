"""Leader failover time: how long the cluster has no leader after the leader process goes away.

Three contenders run as real processes (``python -m steward.demo.contender``), as JobManagers
will. Each trial stops the current leader with a real signal and measures, from just before the
signal is sent, until this process sees the next leader's ``leader/info`` (a higher epoch)
through :class:`LeaderRetrieval`'s watch:

- ``graceful``: SIGTERM. The leader releases on the way out (deletes its info and latch), so a
  standby is granted at once; expected: milliseconds.
- ``crash``: SIGKILL. Nothing is released: the standby waits until ZooKeeper expires the dead
  session. ZooKeeper counts the timeout from the last time it heard from the client (an idle
  kazoo session pings every ~timeout/3) and expires sessions at tick boundaries, so expected:
  between ~2/3 of the session timeout and the timeout plus one tick (500 ms here).

Before each signal the benchmark waits a random fraction (``--seed``) of the ping interval, so
the signals land at random phases of the leader's ping cycle rather than at a fixed delay after
its grant, which would bias the crash figure.

After each trial the stopped contender is replaced by a fresh one and the benchmark waits until
three latches are back and a leader is known, so every trial starts from the same shape. Kinds
alternate (crash first in odd repeats) to cancel drift.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from _common import (
    Json,
    TempZooKeeper,
    document,
    parser,
    progress,
    rotated,
    run_main,
    summary,
    temp_zookeeper,
    wait_until,
)
from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import Session
from steward.wire.records import LeaderInfo
from steward.zookeeper.layout import SERVER_SETTINGS

CONTENDERS = 3
ROOT = "/steward-bench/failover"
KINDS: dict[str, signal.Signals] = {"graceful": signal.SIGTERM, "crash": signal.SIGKILL}
READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class Trial:
    kind: str
    seconds: float
    old: LeaderInfo
    new: LeaderInfo

    def to_json(self) -> Json:
        return {
            "kind": self.kind,
            "seconds": round(self.seconds, 4),
            "from": f"{self.old.contender}@{self.old.epoch}",
            "to": f"{self.new.contender}@{self.new.epoch}",
        }


class LeaderWatch:
    """Records when each epoch's ``leader/info`` was first seen, as the watch delivers it."""

    def __init__(self, session: Session) -> None:
        self._seen: dict[int, tuple[float, LeaderInfo]] = {}
        self._changed = threading.Condition()
        self.retrieval = LeaderRetrieval(session, self._on_leader)

    def _on_leader(self, info: LeaderInfo | None) -> None:
        now = time.monotonic()  # first thing: this is the moment of observation
        if info is None:
            return
        with self._changed:
            self._seen.setdefault(info.epoch, (now, info))
            self._changed.notify_all()

    def latest(self) -> LeaderInfo | None:
        with self._changed:
            return self._seen[max(self._seen)][1] if self._seen else None

    def wait_newer(self, epoch: int, timeout: float) -> tuple[float, LeaderInfo]:
        """When (monotonic) a leader with an epoch above ``epoch`` was first seen, and who."""
        with self._changed:
            if not self._changed.wait_for(lambda: max(self._seen, default=0) > epoch, timeout):
                raise TimeoutError(f"no leader after epoch {epoch} within {timeout:g}s")
            return min((e, seen) for e, seen in self._seen.items() if e > epoch)[1]


class Contenders:
    """The contender processes, by id; replacements get fresh ids (jm-4, jm-5, ...)."""

    def __init__(self, quorum: str, session_timeout: float, logs: Path) -> None:
        self._quorum = quorum
        self._timeout_arg = f"{round(session_timeout * 1000)}ms"
        self._logs = logs
        self._count = 0
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def spawn(self) -> str:
        self._count += 1
        contender = f"jm-{self._count}"
        command = [
            sys.executable,
            "-m",
            "steward.demo.contender",
            *("--quorum", self._quorum, "--root", ROOT, "--id", contender),
            *("--session-timeout", self._timeout_arg),
        ]
        with (self._logs / f"{contender}.log").open("wb") as log:
            # Own session: a Ctrl-C in the terminal must not release the leader mid-trial.
            self.processes[contender] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return contender

    def signal(self, contender: str, signum: signal.Signals) -> None:
        self.processes[contender].send_signal(signum)

    def reap(self, contender: str) -> None:
        process = self.processes.pop(contender)
        code = process.wait(timeout=30)
        if code not in (0, -signal.SIGKILL):
            progress(f"warning: {contender} exited with {code}; see {self._logs}/{contender}.log")

    def stop_all(self) -> None:
        """SIGTERM everything still running, SIGKILL what does not exit within 10 s."""
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()


def wait_ready(session: Session, watch: LeaderWatch, contenders: Contenders) -> LeaderInfo:
    """Until every live contender has a latch (and no dead one has) and a leader is known."""

    def ready() -> LeaderInfo | None:
        latches = session.client.get_children(session.layout.leader_latch)
        leader = watch.latest()
        live = len(contenders.processes)
        if len(latches) == live and leader is not None and leader.contender in contenders.processes:
            return leader
        return None

    return wait_until(ready, READY_TIMEOUT, "three contenders and a leader")


@dataclass(frozen=True)
class Settings:
    repeats: int
    session_timeout: float
    seed: int

    @property
    def ping_interval(self) -> float:
        """About how often kazoo pings an idle session (a third of the timeout)."""
        return self.session_timeout / 3

    @property
    def takeover_timeout(self) -> float:
        return self.session_timeout * 3 + 15


def run_trial(
    kind: str, leader: LeaderInfo, watch: LeaderWatch, contenders: Contenders, timeout: float
) -> Trial:
    started = time.monotonic()
    contenders.signal(leader.contender, KINDS[kind])
    seen_at, new = watch.wait_newer(leader.epoch, timeout)
    trial = Trial(kind, seen_at - started, leader, new)
    contenders.reap(leader.contender)
    progress(f"{kind:8s} {leader.contender} -> {new.contender} in {trial.seconds:.3f}s")
    return trial


def run_trials(zookeeper: TempZooKeeper, settings: Settings, logs: Path) -> list[Trial]:
    trials: list[Trial] = []
    phases = random.Random(settings.seed)
    contenders = Contenders(zookeeper.connect_string, settings.session_timeout, logs)
    try:
        with Session(zookeeper.connect_string, ROOT, name="bench-observer") as session:
            watch = LeaderWatch(session)
            watch.retrieval.start()
            for _ in range(CONTENDERS):
                contenders.spawn()
            for repeat in range(settings.repeats):
                for kind in rotated(list(KINDS), repeat):
                    leader = wait_ready(session, watch, contenders)
                    # ZooKeeper counts the timeout from the dead leader's last ping, so
                    # signal at a random phase of its ping cycle, not a fixed delay after
                    # the grant (which would always land at the same phase).
                    time.sleep(phases.uniform(0, settings.ping_interval))
                    trials.append(
                        run_trial(kind, leader, watch, contenders, settings.takeover_timeout)
                    )
                    contenders.spawn()
            watch.retrieval.stop()
    finally:
        contenders.stop_all()
    return trials


def results(trials: list[Trial], session_timeout: float) -> Json:
    by_kind: Json = {}
    for kind in KINDS:
        seconds = [t.seconds for t in trials if t.kind == kind]
        by_kind[kind] = summary(seconds)
    crash_median = by_kind["crash"]["median"]
    epochs = [t.new.epoch > t.old.epoch for t in trials]
    return {
        **by_kind,
        "session_timeout_s": session_timeout,
        "crash_median_over_session_timeout": round(crash_median / session_timeout, 3),
        "crash_expected_range_s": [
            round(session_timeout * 2 / 3, 3),
            session_timeout + int(SERVER_SETTINGS["tickTime"]) / 1000,
        ],
        "epochs_strictly_increased": all(epochs),
        "trials": [t.to_json() for t in trials],
    }


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--repeats", type=int, default=None, help="trials per kind (default 5)")
    cli.add_argument(
        "--session-timeout", type=float, default=4.0, help="contenders' session timeout, seconds"
    )
    cli.add_argument("--seed", type=int, default=1, help="seed of the random signal phases")
    args = cli.parse_args()
    settings = Settings(
        repeats=args.repeats or (1 if args.quick else 5),
        session_timeout=args.session_timeout,
        seed=args.seed,
    )

    def body() -> Json:
        with temp_zookeeper("failover") as zookeeper:
            logs = zookeeper.workdir / "contenders"
            logs.mkdir()
            progress(f"{settings.repeats} trial(s) per kind, {CONTENDERS} contenders")
            trials = run_trials(zookeeper, settings, logs)
            parameters = {
                "repeats": settings.repeats,
                "contenders": CONTENDERS,
                "session_timeout_s": settings.session_timeout,
                "zookeeper_tick_ms": int(SERVER_SETTINGS["tickTime"]),
                "seed": settings.seed,
                "quick": args.quick,
            }
            return document(
                "leader_failover", parameters, results(trials, settings.session_timeout), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
