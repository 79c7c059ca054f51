"""The steady workload: short and long pipelines (and a few PySpark ones), submitted through
``steward.Client`` with failover across the JobManagers, kept at a constant number in flight.

A submission that fails during a fault is retried with the same job id until it succeeds
(idempotent submit); a job is *accepted* once a submit call for its id returned success. The
client must never report an error for a job it submitted itself (issue 23, item 4): a
``JobExistsError`` for one of this campaign's ids (unique to it), or a ``JobTerminatedError``
before any earlier call of ours could have reached the cluster, is what the client reported
wrongly: the job is followed (it exists) and the report goes to the checker
(``submit-truthful``). A ``JobTerminatedError`` after a call whose outcome the client said it
did not know is the truth (a short job finished in between). Some long jobs are canceled while
they run, so CANCELED results are exercised too.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from chaos.chaos_pipeline import expected_counts
from chaos.checker import AcceptedJob
from steward.client import Client, JobTerminatedError
from steward.errors import JobExistsError, JobRejectedError, StewardError
from steward.wire.jobs import FixedDelayRestart

log = logging.getLogger(__name__)

PIPELINE = Path(__file__).with_name("chaos_pipeline.py")
# Small and quiet: the machine is shared, and a word count of four lines needs no UI.
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}


@dataclass(frozen=True)
class WorkloadSettings:
    in_flight: int = 6
    short_seconds: tuple[float, float] = (1.0, 5.0)
    long_seconds: tuple[float, float] = (15.0, 40.0)
    long_share: float = 0.3
    spark_share: float = 0.0
    cancel_share: float = 0.05
    submit_deadline: float = 180.0
    """How long one job's submission is retried before it counts as never accepted."""


@dataclass
class JobPlan:
    job: str
    mode: str
    seconds: float
    cancel_after: float | None


class Workload:
    """Submits jobs and follows them until :meth:`stop`; thread-safe counters."""

    def __init__(
        self,
        addresses: list[str],
        truth_dir: Path,
        seed: int,
        settings: WorkloadSettings,
        report: Callable[[str], None],
    ) -> None:
        self.addresses = addresses
        self.truth_dir = truth_dir
        self.settings = settings
        self.report = report
        self.rng = random.Random(seed * 7919 + 1)
        self.prefix = f"s{seed}"
        self.accepted: dict[str, AcceptedJob] = {}
        self.accepted_at: dict[str, float] = {}
        self.never_accepted: list[str] = []
        self.misreported: dict[str, str] = {}
        """Jobs of ours the client said it could not submit, and what it raised."""
        self.terminal: dict[str, str] = {}
        self.submit_retries = 0
        self._submitting = 0
        self._counter = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._submitting_stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for index in range(self.settings.in_flight):
            self._threads.append(
                threading.Thread(target=self._submitter, name=f"submit-{index}", daemon=True)
            )
        self._threads.append(threading.Thread(target=self._poller, name="poller", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop_submitting(self) -> None:
        """No new jobs; the poller keeps following the accepted ones."""
        self._submitting_stopped.set()

    def stop(self) -> None:
        self._submitting_stopped.set()
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def open_jobs(self) -> list[str]:
        with self._lock:
            return [job for job in self.accepted if job not in self.terminal]

    def submitting(self) -> int:
        with self._lock:
            return self._submitting

    # ------------------------------------------------------------------ submitting

    def _plan(self) -> JobPlan:
        with self._lock:
            self._counter += 1
            number = self._counter
            rng = self.rng
            spark = rng.random() < self.settings.spark_share
            long = not spark and rng.random() < self.settings.long_share
            bounds = self.settings.long_seconds if long else self.settings.short_seconds
            seconds = round(rng.uniform(*bounds), 2)
            cancel = long and rng.random() < self.settings.cancel_share / self.settings.long_share
            cancel_after = round(rng.uniform(3.0, seconds * 0.7), 2) if cancel else None
        mode = "spark" if spark else "plain"
        kind = "spark" if spark else ("long" if long else "short")
        return JobPlan(f"{self.prefix}-{number:05d}-{kind}", mode, seconds, cancel_after)

    def _submitter(self) -> None:
        client = Client(self.addresses, timeout=20.0)
        try:
            while not self._submitting_stopped.is_set():
                plan = self._plan()
                with self._lock:
                    self._submitting += 1
                try:
                    accepted = self._submit(client, plan)
                finally:
                    with self._lock:
                        self._submitting -= 1
                if accepted:
                    self._follow(client, plan)
        finally:
            client.close()

    def _submit(self, client: Client, plan: JobPlan) -> bool:
        deadline = time.monotonic() + self.settings.submit_deadline
        tries = 0
        outcome_unknown = False  # an earlier call ended without knowing whether it got through
        while time.monotonic() < deadline and not self._stop.is_set():
            tries += 1
            try:
                client.submit(
                    PIPELINE,
                    args=[str(self.truth_dir), str(plan.seconds), plan.mode],
                    job_id=plan.job,
                    restart=FixedDelayRestart(attempts=1000, delay=0.5),
                    spark_conf=SPARK_CONF if plan.mode == "spark" else None,
                )
            except JobTerminatedError as exc:
                if not outcome_unknown:
                    self._misreport(plan, exc)
            except JobExistsError as exc:
                # The id is unique to this campaign: the job is ours, the error is not true.
                self._misreport(plan, exc)
            except JobRejectedError as exc:
                # A fault (read-only storage) can make the server refuse; the spec is fine.
                self._retry_note(plan, exc)
                continue
            except StewardError as exc:
                outcome_unknown = True
                self._retry_note(plan, exc)
                continue
            self._accept(plan)
            return True
        self.never_accepted.append(plan.job)
        self.report(f"job {plan.job} never accepted after {tries} tries")
        return False

    def submit_via(
        self, addresses: list[str], prefix: str, transport: httpx.BaseTransport | None = None
    ) -> str | None:
        """Submit one short job of ours, its id starting with ``prefix``, through ``addresses``
        alone (the nemesis' submission through a standby), as :meth:`_submit` does; the job
        is then followed like every other. Its id if accepted, else None."""
        plan = self._plan()
        plan = JobPlan(f"{prefix}{plan.job}", plan.mode, plan.seconds, cancel_after=None)
        with self._lock:
            self._submitting += 1
        client = Client(addresses, timeout=20.0, transport=transport)
        try:
            return plan.job if self._submit(client, plan) else None
        finally:
            client.close()
            with self._lock:
                self._submitting -= 1

    def _misreport(self, plan: JobPlan, exc: Exception) -> None:
        with self._lock:
            self.misreported[plan.job] = f"{type(exc).__name__}: {exc}"
        self.report(f"job {plan.job}: the client reported {type(exc).__name__} for its own job")

    def _retry_note(self, plan: JobPlan, exc: Exception) -> None:
        with self._lock:
            self.submit_retries += 1
        log.info("submit retry job=%s error=%s", plan.job, exc)
        self._stop.wait(1.0)

    def _accept(self, plan: JobPlan) -> None:
        counts = expected_counts(plan.job) if plan.mode == "spark" else None
        with self._lock:
            self.accepted[plan.job] = AcceptedJob(plan.job, plan.mode, counts)
            self.accepted_at[plan.job] = time.monotonic()

    def _follow(self, client: Client, plan: JobPlan) -> None:
        """Wait until the job is terminal (the poller sees it); cancel it on schedule."""
        accepted_at = time.monotonic()
        canceled = False
        while not self._stop.is_set():
            with self._lock:
                if plan.job in self.terminal:
                    return
            if (
                plan.cancel_after is not None
                and not canceled
                and time.monotonic() - accepted_at >= plan.cancel_after
            ):
                try:
                    client.cancel(plan.job)
                    canceled = True
                    self.report(f"canceled {plan.job}")
                except StewardError as exc:
                    log.info("cancel retry job=%s error=%s", plan.job, exc)
            self._stop.wait(0.5)

    # ------------------------------------------------------------------ following

    def _poller(self) -> None:
        client = Client(self.addresses, timeout=10.0)
        try:
            while not self._stop.is_set():
                if self.open_jobs():
                    try:
                        views = client.jobs()
                    except StewardError as exc:
                        log.info("poll failed: %s", exc)
                    else:
                        self._note_terminal({v.job_id: v.state.value for v in views})
                self._stop.wait(1.0)
        finally:
            client.close()

    def _note_terminal(self, states: dict[str, str]) -> None:
        done = []
        with self._lock:
            for job in self.accepted:
                state = states.get(job)
                if job not in self.terminal and state in ("FINISHED", "FAILED", "CANCELED"):
                    self.terminal[job] = state
                    done.append((job, state))
        for job, state in done:
            self.report(f"job {job} {state}")
