"""A TaskManager load simulator, for benchmarks only: many TaskManagers without their processes.

What is real: each simulated TaskManager's registration (``taskmanagers/<tm-id>``, ephemeral,
on a real ZooKeeper session), its execution leases (``executions/<job-id>``, created through
:class:`~steward.store.leases.ExecutionLeases`, fenced by the leader's epoch as rule 3 wants)
and its heartbeats (the wire protocol's :class:`~steward.wire.heartbeat.Heartbeat`, POSTed over
HTTP with the cluster's internal credential, long-polling like a TaskManager's ``_poll`` loop,
turning to another JobManager when answered ``not_leader``; an unchanged heartbeat asks the
idle hold the leader says, as a TaskManager's poll does, where the code under test has idle
holds). The JobManagers under test are
real processes and cannot tell these TaskManagers from real ones.

What it leaves out: attempts are entries in a dict, not runner processes (no Spark, no process
group, no dead-man's switch, no self-fencing); a start command is counted, not run (the
benchmarks that use it expect none: every attempt is adopted), unless ``run_for`` is given:
then each start takes the job's execution lease (fenced by the command's epoch, as rule 3
wants), runs for that many seconds, releases the lease with its outcome record and reports
ENDED, FINISHED (``fair_share.py``: slots turning over); heartbeats of all simulated
TaskManagers come from one asyncio loop in one process (each TaskManager its own HTTP
client), so on a loaded machine fewer than one heartbeat per TaskManager per interval may be
sent; no notifier, pacer or poll abandoned at a leader change (the simulated reports change
only with ``run_for``'s starts and ends, carried by the next poll, which is never held longer
than an interval while an attempt is due to end); ``tms_per_session``
TaskManagers share one ZooKeeper session (1 = one session each, as
real TaskManagers; more, to spare this machine's threads: the leader's work does not depend on
it, ZooKeeper's session count does).

It imports neither the JobManager nor the TaskManager: only the stores, the HA session and the
wire protocol, as both of them do.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from steward.ha.acl import ZooKeeperAccess
from steward.ha.session import Session
from steward.store.leases import ExecutionLeases
from steward.wire.heartbeat import (
    HEARTBEAT_PATH,
    AttemptReport,
    CancelAttempt,
    Heartbeat,
    HeartbeatReply,
    StartAttempt,
)
from steward.wire.records import TaskManagerInfo
from steward.wire.runner_protocol import FinishedEvent
from steward.wire.states import AttemptPhase

try:  # the code under test may be older than unchanged heartbeats (a "before" run)
    from steward.wire.heartbeat import reports_digest

    DIGESTS = True
except ImportError:  # pragma: no cover - only against an older source tree
    DIGESTS = False

NOT_LEADER = (409, 421, 503)
QUICK_IDLE_HOLD = 2.0
"""Seconds: the ``heartbeat.idle-hold`` of a benchmark's quick run (short windows see every
TaskManager's poll)."""


@dataclass
class SimulatedTaskManager:
    """One TaskManager: its registration's session, its running attempts, what it was told."""

    tm_id: str
    slots: int
    session: Session
    attempts: dict[str, AttemptReport] = field(default_factory=dict)
    epoch: int = 0
    seq: int = 0
    ends: dict[str, float] = field(default_factory=dict)
    """Monotonic time each simulated attempt ends (``run_for``), by job id."""
    taken: tuple[int, str] | None = None
    """The leader epoch and digest of the reports the last reply said that leader keeps."""
    said_hold: float | None = None
    """The idle hold that reply said (None: none, an older leader)."""
    changing: int = 0
    """Busy: this many of its attempts report new progress all the time. Every heartbeat
    carries it where the code under test has no ``heartbeat.progress-interval`` (its reports
    are never unchanged); else a poll carries it once that long has passed since the last
    (:mod:`steward.taskmanager.progress_pacer`)."""
    progress_at: float = float("-inf")
    """When its heartbeats' progress was last renewed (monotonic)."""

    @property
    def address(self) -> str:
        return f"http://{self.tm_id}.simulated.invalid:1"

    def beat(self, wait: float, idle_hold: float | None = None) -> Heartbeat:
        """The next heartbeat: without its reports (``unchanged``) if the leader keeps them,
        as a TaskManager's, where the code under test knows unchanged heartbeats; an unchanged
        one asks the shorter of ``idle_hold`` and the leader's, if both are known."""
        self.seq += 1
        self._progress()
        attempts = list(self.attempts.values())
        fields: dict[str, object] = {}
        if DIGESTS:
            digest = reports_digest(attempts)
            unchanged = self.taken == (self.epoch, digest)
            fields = {"digest": digest, "unchanged": unchanged}
            attempts = [] if unchanged else attempts
            # One with an attempt due to end (``run_for``) polls every interval: a real one's
            # notifier would send the end at once, this one's next poll does. Where progress is
            # paced, a real one's poll asks the hold of a leader that keeps its reports.
            held = (unchanged or PROGRESS_INTERVAL is not None) and not self.ends
            held = held and self.taken is not None and self.taken[0] == self.epoch
            if held and idle_hold is not None and self.said_hold is not None:
                wait = max(wait, min(idle_hold, self.said_hold))
        return Heartbeat(
            taskmanager=self.tm_id,
            address=self.address,
            slots=self.slots,
            epoch=self.epoch,
            attempts=attempts,
            wait=wait,
            session=self.session.session_id,
            seq=self.seq,
            settled=self.seq - 1,
            **fields,  # type: ignore[arg-type]
        )

    def _progress(self) -> None:
        """New progress of its busy attempts, as often as the code under test sends it."""
        now = time.monotonic()
        if not self.changing or now < self.progress_at + (PROGRESS_INTERVAL or 0.0):
            return
        self.progress_at = now
        for job_id in list(self.attempts)[: self.changing]:
            self.attempts[job_id] = self.attempts[job_id].model_copy(
                update={"progress": {"beat": self.seq, "rows": self.seq * 1000}}
            )


@dataclass
class Tally:
    """What the simulated TaskManagers saw, for the benchmark's checks."""

    answered: int = 0
    unchanged: int = 0
    """Heartbeats sent without their reports (the leader kept them)."""
    refused: int = 0
    failed: int = 0
    commands: Counter[str] = field(default_factory=Counter)
    started: dict[str, float] = field(default_factory=dict)
    """``run_for``: monotonic time each job's attempt took its lease, by job id."""
    ended: dict[str, float] = field(default_factory=dict)


class TaskManagerSimulator:
    """``count`` simulated TaskManagers of ``slots`` slots in one cluster namespace.

    Use: :meth:`register`, :meth:`hold` jobs (their leases, attempt 1, at the current epoch),
    :meth:`start` the heartbeats towards ``addresses``, read :attr:`tally` and :meth:`epochs`,
    :meth:`stop`.
    """

    def __init__(
        self,
        quorum: str,
        root: str,
        access: ZooKeeperAccess,
        *,
        count: int,
        slots: int,
        internal_credential: str,
        interval: float = 1.0,
        tms_per_session: int = 1,
        session_timeout: float = 10.0,
        run_for: float | None = None,
    ) -> None:
        self._quorum, self._root, self._access = quorum, root, access
        self.run_for = run_for
        self._session_timeout = session_timeout
        self.interval = interval
        self.idle_hold = default_idle_hold()
        """What the code under test's TaskManager asks at most (None: it has no idle hold)."""
        self.in_flight = 0
        """Heartbeats sent and not answered yet (a pause waits for the held ones)."""
        self._headers = {
            "authorization": f"Bearer {internal_credential}",
            "content-type": "application/json",
        }
        self.sessions: list[Session] = []
        self.taskmanagers = [
            SimulatedTaskManager(f"sim-tm-{i:04d}", slots, self._session_for(i, tms_per_session))
            for i in range(count)
        ]
        self.tally = Tally()
        self.addresses: list[str] = []
        self._leader = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self.paused = False
        """While set, no heartbeat is sent (the leader's idle cost is measured so)."""

    def _session_for(self, index: int, per_session: int) -> Session:
        if index % per_session == 0:
            session = Session(
                self._quorum,
                self._root,
                name=f"sim-tm-session-{len(self.sessions)}",
                session_timeout=self._session_timeout,
                access=self._access,
            )
            session.start()
            self.sessions.append(session)
        return self.sessions[-1]

    # ------------------------------------------------------------------ ZooKeeper state

    def register(self) -> None:
        """Create every registration znode (pipelined per session)."""
        for tm in self.taskmanagers:
            tm.session.client.ensure_path(tm.session.layout.taskmanagers)
            break
        pending = [
            tm.session.client.create_async(
                tm.session.layout.taskmanager(tm.tm_id),
                TaskManagerInfo(address=tm.address, slots=tm.slots).to_json(),
                ephemeral=True,
            )
            for tm in self.taskmanagers
        ]
        for answer in pending:
            answer.get(timeout=60)

    def hold(self, job_ids: list[str], epoch: int, threads: int = 16) -> None:
        """Give ``job_ids`` out round-robin, each a running attempt 1 started at ``epoch``
        that holds its execution lease (the lease created fenced, as a TaskManager does)."""
        started = time.time()
        owners = [self.taskmanagers[i % len(self.taskmanagers)] for i in range(len(job_ids))]
        leases = {tm.tm_id: ExecutionLeases(tm.session, tm.tm_id) for tm in self.taskmanagers}

        def take(index: int) -> None:
            tm, job_id = owners[index], job_ids[index]
            leases[tm.tm_id].acquire(job_id, 1, epoch)
            tm.attempts[job_id] = AttemptReport(
                job_id=job_id,
                attempt=1,
                epoch=epoch,
                phase=AttemptPhase.RUNNING,
                pid=1,
                started_at=started,
            )

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(take, range(len(job_ids))))
        for tm in self.taskmanagers:
            tm.epoch = max(tm.epoch, epoch)

    def epochs(self) -> Counter[int]:
        """How many simulated TaskManagers have seen each newest epoch."""
        return Counter(tm.epoch for tm in self.taskmanagers)

    def running(self) -> int:
        return sum(len(tm.attempts) for tm in self.taskmanagers)

    # ------------------------------------------------------------------ heartbeats

    def start(self, addresses: list[str]) -> None:
        """Heartbeat to whichever of ``addresses`` leads, from a thread of its own."""
        self.addresses = list(addresses)
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stopping = asyncio.Event()
            ready.set()
            loop.run_until_complete(self._beat_all())
            loop.close()

        self._thread = threading.Thread(target=run, name="tm-simulator", daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=30)
        for session in self.sessions:
            with contextlib.suppress(Exception):
                session.close()

    async def _beat_all(self) -> None:
        # A client (one connection) per TaskManager, as each real one has: one client for
        # all made httpcore's pool match every request against every connection, and at 100
        # TaskManagers the simulator's loop spent its CPU there, answering 8 heartbeats a
        # second instead of 100. One TLS context for all: httpx loads the CA certificates
        # for each client otherwise (40 ms each), though the addresses are plain HTTP.
        tls = ssl.create_default_context()
        timeout = httpx.Timeout(self.interval + 30.0)
        clients = [
            httpx.AsyncClient(
                headers=self._headers,
                limits=httpx.Limits(max_connections=1),
                timeout=timeout,
                verify=tls,
            )
            for _ in self.taskmanagers
        ]
        tasks = [
            asyncio.create_task(self._beat(http, tm))
            for http, tm in zip(clients, self.taskmanagers, strict=True)
        ]
        assert self._stopping is not None
        await self._stopping.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for http in clients:
            await http.aclose()

    def _resume_spread(self, tm: SimulatedTaskManager) -> float:
        """Seconds ``tm`` waits after a pause: spread over its hold (the idle hold where there
        is one), or every TaskManager's polls would come in one burst per hold."""
        return (self.idle_hold or self.interval) * (hash(tm.tm_id) % 1000) / 1000

    async def _beat(self, http: httpx.AsyncClient, tm: SimulatedTaskManager) -> None:
        # Spread the first heartbeats over one interval, as TaskManagers started apart are.
        await asyncio.sleep(self.interval * (hash(tm.tm_id) % 1000) / 1000)
        while True:
            if self.paused:
                await asyncio.sleep(self.interval / 10)
                if not self.paused:
                    await asyncio.sleep(self._resume_spread(tm))
                continue
            started = time.monotonic()
            reply = await self._exchange(http, tm)
            pause = started + self.interval - time.monotonic()
            if reply is None or pause > 0:
                await asyncio.sleep(max(pause, 0.05) if reply is not None else self.interval / 4)

    async def _exchange(
        self, http: httpx.AsyncClient, tm: SimulatedTaskManager
    ) -> HeartbeatReply | None:
        self._end_due(tm)
        leader = self._leader
        url = self.addresses[leader] + HEARTBEAT_PATH
        self.in_flight += 1
        try:
            beat = tm.beat(self.interval, self.idle_hold)
            answer = await http.post(url, content=beat.to_json())
        except httpx.HTTPError:
            self.tally.failed += 1
            self._turn(leader)
            return None
        finally:
            self.in_flight -= 1
        if answer.status_code in NOT_LEADER:
            self.tally.refused += 1
            self._turn(leader)
            return None
        answer.raise_for_status()
        reply = HeartbeatReply.from_json(answer.content)
        self.tally.answered += 1
        self._take(tm, reply)
        return reply

    def _turn(self, failed: int) -> None:
        """Try the next JobManager (what leader retrieval tells a real TaskManager)."""
        if self._leader == failed:
            self._leader = (failed + 1) % len(self.addresses)

    def _take(self, tm: SimulatedTaskManager, reply: HeartbeatReply) -> None:
        tm.epoch = max(reply.epoch, tm.epoch)
        taken = getattr(reply, "taken", None)
        tm.taken = None if taken is None else (reply.epoch, taken)
        tm.said_hold = getattr(reply, "idle_hold", None)
        for command in reply.commands:
            self.tally.commands[command.command] += 1
            if isinstance(command, CancelAttempt):
                tm.attempts.pop(command.job_id, None)
            elif self.run_for is not None:
                self._run(tm, command)
        for ack in reply.acks:
            report = tm.attempts.get(ack.job_id)
            if ack.outcome and report is not None and report.phase is AttemptPhase.ENDED:
                del tm.attempts[ack.job_id]  # the leader holds the outcome: forget it

    # ------------------------------------------------------------------ run_for

    def _leases(self, tm: SimulatedTaskManager) -> ExecutionLeases:
        return ExecutionLeases(tm.session, tm.tm_id)

    def _run(self, tm: SimulatedTaskManager, command: StartAttempt) -> None:
        """Take the lease (one blocking round trip: a benchmark's few slots) and run."""
        self._leases(tm).acquire(command.job_id, command.attempt, command.epoch)
        now = time.monotonic()
        self.tally.started[command.job_id] = now
        tm.ends[command.job_id] = now + (self.run_for or 0.0)
        tm.attempts[command.job_id] = AttemptReport(
            job_id=command.job_id,
            attempt=command.attempt,
            epoch=command.epoch,
            phase=AttemptPhase.RUNNING,
            pid=1,
            started_at=time.time(),
        )

    def _end_due(self, tm: SimulatedTaskManager) -> None:
        """Attempts past their time: lease released with the outcome, reported ENDED."""
        now = time.monotonic()
        for job_id in [j for j, at in tm.ends.items() if at <= now]:
            del tm.ends[job_id]
            report = tm.attempts[job_id]
            outcome = FinishedEvent(value=None)
            self._leases(tm).release_recording(job_id, report.attempt, outcome)
            self.tally.ended[job_id] = now
            tm.attempts[job_id] = report.model_copy(
                update={
                    "phase": AttemptPhase.ENDED,
                    "ended_at": time.time(),
                    "outcome": outcome,
                    "lease_released": True,
                }
            )


def default_progress_interval() -> float | None:
    """The code under test's default ``heartbeat.progress-interval`` (None: it has none, and
    sends new progress on every heartbeat)."""
    from steward.config import OPTIONS
    from steward.config.units import to_duration

    option = next((o for o in OPTIONS if o.key == "heartbeat.progress-interval"), None)
    return None if option is None else to_duration(option.default)


PROGRESS_INTERVAL = default_progress_interval()


def default_idle_hold() -> float | None:
    """The code under test's default ``heartbeat.idle-hold`` in seconds (None: it has none)."""
    from steward.config import OPTIONS
    from steward.config.units import to_duration

    option = next((o for o in OPTIONS if o.key == "heartbeat.idle-hold"), None)
    return None if option is None else to_duration(option.default)


@contextlib.contextmanager
def simulated_taskmanagers(
    quorum: str, root: str, access: ZooKeeperAccess, **options: object
) -> Iterator[TaskManagerSimulator]:
    """A :class:`TaskManagerSimulator` stopped (heartbeats, sessions) on the way out."""
    simulator = TaskManagerSimulator(quorum, root, access, **options)  # type: ignore[arg-type]
    try:
        yield simulator
    finally:
        simulator.stop()
