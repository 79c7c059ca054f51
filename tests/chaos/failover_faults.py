"""The nemesis' faults around a failover (issue 23): two faults at once, timed against each other.

- ``storage_stall_failover``: the blob storage stops answering (the campaign's S3 server,
  ``--storage s3``, frozen with SIGSTOP: connections are accepted and never answered, as a
  hung store does) and the leader is killed a moment later, so the next leader recovers its
  jobs while it cannot read their graphs. It must wait the stall out: no job failed, none lost.
- ``forward_cut_after_store``: the nemesis submits a job of the workload's through a standby;
  the leader stores it and freezes before answering (every JobManager runs with the test fault
  point ``STEWARD_FREEZE_AT=submit.stored:<prefix>``, armed for the nemesis' own job ids), and
  is killed there. The standby's forward was sent and never answered: it must say
  ``504 outcome_unknown``, and the client's retries must end in success for that one job.

A mixin of :class:`chaos.nemesis.Nemesis`, which owns the state and helpers used here.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx
import psutil

from steward.jobmanager.faults import FREEZE_AT, SUBMIT_STORED
from steward.store.blob import BlobStore
from steward.testing.processes import Proc
from steward.testing.s3 import S3Server

if TYPE_CHECKING:
    from chaos.cluster import ChaosCluster
    from chaos.nemesis import Failover, Fault, NemesisSettings
    from chaos.workload import Workload

FORWARD_PREFIX = "fwd-"
"""The job ids the fault point is armed for: the nemesis' own submissions, no other."""


def arm(
    cluster: ChaosCluster, kinds: Sequence[str], storage: str, workdir: Path
) -> S3Server | None:
    """What these faults need before any member starts: every JobManager freezes after
    storing one of the nemesis' own submissions; with ``storage`` ``s3``, the HA storage on a
    moto S3 server of its own (returned: what stalls)."""
    if "forward_cut_after_store" in kinds:
        cluster.environment = {FREEZE_AT: f"{SUBMIT_STORED}:{FORWARD_PREFIX}"}
    if storage != "s3":
        return None
    s3 = S3Server(workdir)
    cluster.environment = {**cluster.environment, **s3.environment()}
    cluster.settings["high-availability.storage-dir"] = s3.url("cluster")
    return s3


def blob_store(workdir: Path, s3: S3Server | None) -> BlobStore:
    """The cluster's blob storage as this process reaches it (for the results' bodies)."""
    if s3 is None:
        return BlobStore(f"file://{workdir / 'storage'}")
    environ = s3.environment()
    return BlobStore(
        s3.url("cluster"),
        endpoint_url=s3.endpoint,
        key=environ["AWS_ACCESS_KEY_ID"],
        secret=environ["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={"region_name": environ["AWS_DEFAULT_REGION"]},
    )


class Stallable(Protocol):
    """A store that can be made to stop answering and answer again (``S3Server``)."""

    def freeze(self) -> None: ...

    def thaw(self) -> None: ...


class SubmitRecorder(httpx.HTTPTransport):
    """The client's own transport, noting the status of every submission it sent (or the
    transport error): evidence of what the standby answered."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        submission = request.method == "POST" and request.url.path == "/v1/jobs"
        try:
            response = super().handle_request(request)
        except httpx.TransportError as exc:
            if submission:
                self.answers.append(type(exc).__name__)
            raise
        if submission:
            self.answers.append(str(response.status_code))
        return response


class FailoverFaults:
    """Faults whose second half lands while the first one is on."""

    settings: NemesisSettings
    failovers: list[Failover]
    report: Callable[[str], None]
    stall: Stallable | None
    workload: Workload | None
    _stop: threading.Event
    _frozen: set[int]

    def _storage_stall_failover(self, rng: random.Random) -> Fault | None:
        leader = self._jobmanager(rng, leader=True)
        if leader is None or self.stall is None:
            return None
        stall = rng.uniform(*self.settings.storage_stall)
        delay = rng.uniform(*self.settings.restart_delay)
        fault: Fault = self._begin(
            "storage_stall_failover",
            leader.id,
            stall_s=round(stall, 2),
            restart_after_s=round(delay, 2),
        )
        self.stall.freeze()
        try:
            self._stop.wait(rng.uniform(0.0, 1.0))  # the store hangs first, then the leader dies
            leader.signal(signal.SIGKILL)
            leader.popen.wait(10)
            ready = self._await_leader(
                leader, fault.start_t + stall, restart_at=fault.start_t + delay
            )
        finally:
            self.stall.thaw()
        fault.detail["new_leader_during_stall"] = ready is not None
        if ready is None:  # the failover waited for the store: measured from now on
            self._measure_failover(
                "storage_stall_failover", leader.id, fault.start_t, until=None, restart=(leader, 0)
            )
        else:
            self._failover_seen("storage_stall_failover", leader.id, *ready, since=fault.start_t)
        fault.end_t = time.monotonic()
        return fault

    def _await_leader(
        self, old: Proc, until: float, *, restart_at: float
    ) -> tuple[str, float] | None:
        """Until ``until`` (the stall's end): restart ``old`` when due; the first other
        JobManager that answered /readyz as the leader meanwhile, and when."""
        ready: tuple[str, float] | None = None
        while time.monotonic() < until and not self._stop.is_set():
            if time.monotonic() >= restart_at and self.cluster.member(old.id) is old:
                self.cluster.restart(old)
            if ready is None:
                new = self.cluster.ready_leader(exclude=old.id)
                ready = None if new is None else (new, time.monotonic())
            self._stop.wait(0.2)
        return ready

    def _failover_seen(self, trigger: str, old: str, new: str, at: float, *, since: float) -> None:
        from chaos.nemesis import Failover  # chaos.nemesis imports this module

        self.failovers.append(Failover(trigger, old, new, at - since))
        self.report(f"failover {old} -> {new} in {at - since:.2f}s (storage still stalled)")

    def _forward_cut_after_store(self, rng: random.Random) -> Fault | None:
        leader = self._jobmanager(rng, leader=True)
        standby = self._jobmanager(rng, leader=False)
        if leader is None or standby is None or self.workload is None:
            return None
        delay = rng.uniform(*self.settings.restart_delay)
        fault: Fault = self._begin(
            "forward_cut_after_store", f"{standby.id}->{leader.id}", restart_after_s=round(delay, 2)
        )
        recorder = SubmitRecorder()
        outcome: dict[str, str | None] = {}
        workload = self.workload
        submitter = threading.Thread(
            target=lambda: outcome.update(
                job=workload.submit_via([standby.address], FORWARD_PREFIX, recorder)
            ),
            name="nemesis-forward-cut",
            daemon=True,
        )
        submitter.start()
        frozen = self._wait_frozen(submitter)
        if frozen is not None:  # the leader stored the job and froze before it answered
            self._frozen.add(frozen.pid)
            frozen.signal(signal.SIGKILL)
            frozen.popen.wait(10)
            self._frozen.discard(frozen.pid)
            restart_at = time.monotonic() + delay
            self._measure_failover(
                "forward_cut_after_store",
                frozen.id,
                fault.start_t,
                until=None,
                restart=(frozen, restart_at),
            )
            remaining = restart_at - time.monotonic()
            if remaining > 0:
                self._stop.wait(remaining)  # the restart delay drawn from the seeded RNG
            if self.cluster.member(frozen.id) is frozen:
                self.cluster.restart(frozen)
        submitter.join(workload.settings.submit_deadline + 30)
        fault.detail.update(
            frozen=None if frozen is None else frozen.id,
            answers=recorder.answers,
            job=outcome.get("job"),
            accepted=bool(outcome.get("job")),
        )
        fault.end_t = time.monotonic()
        return fault

    def _wait_frozen(self, submitter: threading.Thread) -> Proc | None:
        """The JobManager that stopped at the fault point (it stored the submission and did
        not answer), or None if the submission ended first; whichever leads by then, the one
        asked or a standby promoted meanwhile, is the one that freezes. No submission succeeds
        without a store, and every store of the nemesis' job freezes its leader, so this ends
        with that leader, or with a submission that never got stored (None)."""
        while submitter.is_alive():
            for proc in self.cluster.current("jobmanager"):
                with contextlib.suppress(psutil.Error):
                    stopped = psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED
                    if stopped and proc.pid not in self._frozen:
                        return proc
            time.sleep(0.02)
        return None
