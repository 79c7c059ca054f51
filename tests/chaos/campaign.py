"""One chaos campaign: start a cluster, run the workload under the nemesis, quiesce, check.

    PYTHONPATH=tests python -m chaos.campaign --seed 7 --duration 30m --out summary.json

(scripts/chaos.sh does exactly that with the project's venv.) Prints progress while it runs
(faults as they happen, jobs as they end), writes the JSON summary, and exits 1 if any
invariant was violated, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import Observations, check
from chaos.cluster import ChaosCluster, StorageFreezer
from chaos.failover_faults import arm, blob_store
from chaos.hastate import HaState, read_state
from chaos.hosts import Hosts
from chaos.nemesis import (
    FAILOVER_KINDS,
    INFRA_KINDS,
    NETWORK_KINDS,
    PROCESS_KINDS,
    Nemesis,
    NemesisSettings,
)
from chaos.summary import summarize
from chaos.truth import DeathWatcher, GroundTruth, prepare, still_running
from chaos.workload import Workload, WorkloadSettings
from steward.client import Client
from steward.errors import StewardError
from steward.store.blob import BlobStore
from steward.testing.s3 import S3Server
from steward.testing.waiting import WaitTimeoutError, wait_until
from steward.testing.zookeeper import start_ensemble
from support import ZK_TEST_ROOT

Report = Callable[[str], None]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CampaignSettings:
    seed: int
    duration: float
    workdir: Path | None = None
    session_timeout: float = 4.0
    jobmanagers: int = 3
    taskmanagers: int = 3
    slots: int = 2
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    fault_interval: float = 8.0
    kinds: tuple[str, ...] = PROCESS_KINDS + INFRA_KINDS
    quiesce_timeout: float = 300.0
    keep_workdir: bool = False
    network: bool = False
    """Every member on a host (network namespace) of its own, and the network faults."""
    fault_cycle: bool = False
    """Every kind once per round (``NemesisSettings.cycle``) rather than drawn at random."""
    storage: str = "file"
    """``file`` (a directory) or ``s3`` (a moto S3 server, which ``storage_stall_failover``
    freezes); ``s3`` runs on one host, not with ``network``."""


class Campaign:
    def __init__(self, settings: CampaignSettings, report: Report) -> None:
        self.settings = settings
        self.started = time.monotonic()
        self._report = report
        self._owned_workdir = settings.workdir is None
        self.workdir = settings.workdir or Path(
            tempfile.mkdtemp(prefix=f"steward-chaos-{settings.seed}-")
        )
        self.truth_dir = self.workdir / "truth"
        self.cluster_id = f"chaos-{settings.seed}-{secrets.token_hex(3)}"

    def report(self, message: str) -> None:
        self._report(f"[{time.monotonic() - self.started:8.1f}s] {message}")

    # ------------------------------------------------------------------ the run

    def run(self) -> dict[str, Any]:
        s = self.settings
        prepare(self.truth_dir)
        hosts = Hosts() if s.network else None  # this thread moves onto their network
        self.report(f"workdir {self.workdir}; starting a 3-server ZooKeeper ensemble")
        try:
            ensemble = (
                hosts.start_ensemble(self.workdir / "zookeeper", timeout=90.0)
                if hosts is not None
                else start_ensemble(self.workdir / "zookeeper", servers=3, timeout=90.0)
            )
        except BaseException:
            if hosts is not None:
                hosts.close()
            raise
        cluster = ChaosCluster(
            self.workdir,
            ensemble.connect_string,
            self.cluster_id,
            session_timeout=f"{s.session_timeout}s",
        )
        cluster.hosts = hosts
        storage = StorageFreezer(self.workdir / "storage")
        watcher = DeathWatcher(self.truth_dir)
        s3: S3Server | None = None
        try:
            s3 = arm(cluster, self.settings.kinds, self.settings.storage, self.workdir)
            if s3 is not None:
                self.report(f"storage {s3.url('cluster')} on moto's S3 server {s3.endpoint}")
            if "storage_readonly" in s.kinds:
                # Before any member starts: its mount namespace must see later mounts here.
                with contextlib.suppress(OSError, subprocess.CalledProcessError):
                    storage.prepare()  # the nemesis says why not, if it cannot
            for index in range(s.jobmanagers):
                cluster.start_jobmanager(f"jm-{index + 1}")
            for index in range(s.taskmanagers):
                cluster.start_taskmanager(f"tm-{index + 1}", slots=s.slots)
            cluster.wait_ready(taskmanagers=s.taskmanagers, timeout=120.0)
            self.report(f"cluster {self.cluster_id} ready; workload and nemesis start")
            return self._campaign(
                cluster, ensemble.connect_string, storage, watcher, ensemble, s3=s3
            )
        finally:
            # Every step runs whatever an earlier one raised: one that failed (an interrupted
            # unmount) once left a whole cluster running behind a finished campaign.
            steps: list[Callable[[], None]] = [storage.thaw, watcher.stop, cluster.stop]
            steps += [storage.release, ensemble.stop] + ([s3.stop] if s3 is not None else [])
            steps += [hosts.close] if hosts is not None else []
            for step in steps:
                try:
                    step()
                except Exception:
                    log.exception("campaign cleanup step failed: %s", step)
            if self._owned_workdir and not s.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def _campaign(
        self,
        cluster: ChaosCluster,
        quorum: str,
        storage: StorageFreezer,
        watcher: DeathWatcher,
        ensemble: Any,
        *,
        s3: S3Server | None,
    ) -> dict[str, Any]:
        s = self.settings
        addresses = [p.address for p in cluster.jobmanagers()]
        workload = Workload(addresses, self.truth_dir, s.seed, s.workload, self.report)
        nemesis = Nemesis(
            cluster,
            ensemble,
            storage=storage,
            watcher=watcher,
            seed=s.seed,
            settings=NemesisSettings(
                session_timeout=s.session_timeout,
                mean_interval=s.fault_interval,
                kinds=s.kinds,
                cycle=s.fault_cycle,
            ),
            report=self.report,
            hosts=cluster.hosts,
            stall=s3,
            workload=workload,
        )
        for kind, reason in nemesis.skipped.items():
            self.report(f"{kind}: {reason}")
        watcher.start()
        workload.start()
        nemesis.start()
        began = time.monotonic()
        crashes_seen = 0
        ticker = threading.Event()
        try:
            while time.monotonic() - began < s.duration:
                ticker.wait(min(10.0, max(0.0, s.duration - (time.monotonic() - began))))
                crashes_seen = self._restart_crashed(cluster, crashes_seen)
                self._progress(workload, nemesis)
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): heal, then run()'s cleanup
            self.report("interrupted: faults stop and heal; the cluster is stopped")
            workload.stop_submitting()
            nemesis.stop()
            workload.stop()
            raise
        ran = time.monotonic() - began
        self.report("duration reached: faults stop, everything is healed (quiesce)")
        workload.stop_submitting()
        nemesis.stop()
        self._quiesce(workload)
        last_views = self._views(addresses, workload.open_jobs())
        workload.stop()
        blobs = blob_store(self.workdir, s3)
        state = self._settle(quorum, workload, cluster.zookeeper_access.kazoo_options(), blobs)
        truth = self._settle_attempts(watcher)
        self._whole(cluster)
        failures = cluster.failures()
        exits = cluster.stop_all()
        failures += [
            {"process": name, "exit_code_after_sigterm": code}
            for name, code in exits.items()
            if code != 0
        ]
        observations = Observations(
            accepted=dict(workload.accepted),
            results=state.results,
            truth=truth,
            still_running=[a for a in truth.attempts.values() if still_running(self.truth_dir, a)],
            pointers=state.pointers,
            leases=state.leases,
            process_failures=failures,
            reported=dict(workload.terminal),
            last_views=last_views,
            misreported=dict(workload.misreported),
        )
        violations = check(observations)
        return summarize(
            self,
            ran,
            workload=workload,
            nemesis=nemesis,
            obs=observations,
            violations=violations,
            cluster=cluster,
        )

    # ------------------------------------------------------------------ phases

    def _restart_crashed(self, cluster: ChaosCluster, seen: int) -> int:
        failures = cluster.failures(scan_logs=False)
        for failure in failures[seen:]:
            self.report(f"VIOLATION: {failure['process']} exited ({failure['exit_code']})")
        for proc in list(cluster.procs):
            if not proc.signalled and not proc.alive() and cluster.member(proc.id) is proc:
                cluster.restart(proc)
        return len(failures)

    def _progress(self, workload: Workload, nemesis: Nemesis) -> None:
        done = list(workload.terminal.values())
        self.report(
            f"progress: accepted {len(workload.accepted)}, finished {done.count('FINISHED')},"
            f" failed {done.count('FAILED')}, canceled {done.count('CANCELED')},"
            f" open {len(workload.open_jobs())}, faults {len(nemesis.faults)}"
        )

    def _quiesce(self, workload: Workload) -> None:
        deadline = time.monotonic() + self.settings.quiesce_timeout
        ticker = threading.Event()
        while time.monotonic() < deadline:
            if not workload.open_jobs() and workload.submitting() == 0:
                self.report("quiesced: every accepted job is terminal")
                return
            ticker.wait(0.1)  # a look at the workload's own sets: cheap
        self.report(f"quiesce deadline: still open {workload.open_jobs()}")

    def _views(self, addresses: list[str], jobs: list[str]) -> dict[str, Any]:
        """The REST views of jobs still open, as evidence of where they got stuck."""
        views: dict[str, Any] = {}
        with Client(addresses, timeout=10.0) as client:
            for job in jobs:
                try:
                    views[job] = client.job(job).model_dump(mode="json")
                except StewardError as exc:
                    views[job] = {"error": repr(exc)}
        return views

    def _settle(
        self, quorum: str, workload: Workload, kazoo_options: dict[str, Any], blobs: BlobStore
    ) -> HaState:
        """Wait (bounded) until every accepted job's result is CLEAN and no lease is left."""
        root = f"{ZK_TEST_ROOT}/{self.cluster_id}"
        deadline = time.monotonic() + max(60.0, 10 * self.settings.session_timeout)
        ticker = threading.Event()
        while True:
            state = read_state(quorum, root, blobs, kazoo_options)
            clean = all(
                job in state.results and state.results[job].status == "CLEAN"
                for job in workload.accepted
            )
            if (clean and not state.leases) or time.monotonic() > deadline:
                return state
            ticker.wait(1.0)

    def _whole(self, cluster: ChaosCluster) -> None:
        """Every member up before the final SIGTERM (bounded): one restarted as a fault healed
        at the very end would get it while still importing, before its handler exists, and
        die of it (exit -15, counted as a crash). A member that cannot come up is reported by
        the crash check that follows."""

        def jobmanagers_ready() -> bool:
            live = [p for p in cluster.current("jobmanager") if p.alive()]
            return all(cluster.readyz(p) is not None for p in live)

        with contextlib.suppress(AssertionError, WaitTimeoutError):
            cluster.wait_ready(taskmanagers=self.settings.taskmanagers, timeout=120.0)
            wait_until(jobmanagers_ready, 60.0, message="every JobManager ready")

    def _settle_attempts(self, watcher: DeathWatcher) -> GroundTruth:
        """Give the last runners time to exit (bounded), then take the ground truth."""
        deadline = time.monotonic() + 5 * self.settings.session_timeout
        ticker = threading.Event()
        while time.monotonic() < deadline:
            watcher.read_new()
            truth = watcher.snapshot()
            if not any(still_running(self.truth_dir, a) for a in truth.attempts.values()):
                break
            ticker.wait(0.5)
        watcher.stop()
        return watcher.snapshot()


# ---------------------------------------------------------------------- command line

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)?$")


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``1.5h`` -> seconds; ValueError otherwise."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"invalid duration {text!r}: use e.g. 90s, 30m or 1h")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="chaos.sh", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--duration", type=str, default="5m", help="e.g. 90s, 30m, 1h")
    parser.add_argument("--out", type=Path, required=True, help="where the JSON summary goes")
    parser.add_argument("--spark-share", type=float, default=0.05)
    parser.add_argument("--fault-interval", type=float, default=8.0, help="mean s between faults")
    parser.add_argument("--session-timeout", type=float, default=4.0)
    parser.add_argument("--in-flight", type=int, default=6)
    parser.add_argument("--jobmanagers", type=int, default=3)
    parser.add_argument("--taskmanagers", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep-workdir", action="store_true")
    parser.add_argument(
        "--network",
        action="store_true",
        help="every member on a host (network namespace) of its own, and network faults"
        " (needs root and `ip`, `tc`)",
    )
    parser.add_argument(
        "--storage",
        choices=("file", "s3"),
        default="file",
        help="the HA blob storage: a directory, or a moto S3 server (the storage stall fault)",
    )
    parser.add_argument(
        "--kinds",
        type=str,
        default="",
        help="comma-separated fault kinds to draw from (default: all, the network's with"
        " --network)",
    )
    args = parser.parse_args(argv)
    known = PROCESS_KINDS + INFRA_KINDS + FAILOVER_KINDS + (NETWORK_KINDS if args.network else ())
    if args.storage == "s3" and args.network:
        parser.error("--storage s3 runs on one host: not with --network")
    args.kinds = tuple(kind.strip() for kind in args.kinds.split(",") if kind.strip()) or known
    unknown = set(args.kinds) - set(known)
    if unknown:
        parser.error(f"--kinds: unknown {sorted(unknown)}; known: {known}")
    try:
        args.duration = parse_duration(args.duration)
    except ValueError as exc:
        parser.error(str(exc))
    if not 0.0 <= args.spark_share <= 1.0:
        parser.error("--spark-share must be between 0 and 1")
    if args.fault_interval <= 0 or args.in_flight < 1 or args.session_timeout <= 0:
        parser.error("--fault-interval, --session-timeout and --in-flight must be positive")
    if args.jobmanagers < 1 or args.taskmanagers < 1:
        parser.error("--jobmanagers and --taskmanagers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    settings = CampaignSettings(
        seed=args.seed,
        duration=args.duration,
        workdir=args.workdir,
        session_timeout=args.session_timeout,
        jobmanagers=args.jobmanagers,
        taskmanagers=args.taskmanagers,
        workload=WorkloadSettings(in_flight=args.in_flight, spark_share=args.spark_share),
        fault_interval=args.fault_interval,
        keep_workdir=args.keep_workdir,
        kinds=args.kinds,
        network=args.network,
        storage=args.storage,
    )
    campaign = Campaign(settings, lambda line: print(line, flush=True))
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        summary = campaign.run()
    except KeyboardInterrupt:
        print("interrupted: every process it started is stopped, its namespaces deleted")
        return 130
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("faults",)}, indent=2))
    print(f"summary written to {args.out}; violations: {len(summary['violations'])}")
    return 1 if summary["violations"] else 0


def _interrupted(signum: int, _frame: object) -> None:
    """SIGTERM ends a campaign as Ctrl-C does: everything it started is stopped and healed."""
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
