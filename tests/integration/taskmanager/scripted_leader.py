"""A scripted leader for TaskManager tests: a real election, a fake JobManager.

``ScriptedLeader`` contends through the real :class:`LeaderElection` (so it gets a real epoch
and publishes ``leader/info`` with its address) and serves ``POST /internal/v1/heartbeat``
with a stdlib HTTP server. It records every heartbeat, hands out the commands a test queues
(holding a long poll until one is queued, like a JobManager), and acknowledges what the test
says: outcomes and checkpoints, or nothing.

Also here: writing a job graph to blob storage and the start command that names it, the
small pipelines the tests run (no Spark, so no JVM), and :func:`run_gated`: a GATED attempt
started, seen running, let go and seen ended.

Import as ``from scripted_leader import ...`` from tests in this folder.
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from steward.artifacts.pipeline import build_artifact
from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.wire.heartbeat import (
    HEARTBEAT_PATH,
    Ack,
    AttemptReport,
    Command,
    Heartbeat,
    HeartbeatReply,
    StartAttempt,
)
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.states import AttemptPhase
from support import wait_until

GRANT_TIMEOUT = 15.0

# A pipeline that reports progress, then waits until its gate file exists; an optional
# checkpoint first. It never touches ctx.spark.
GATED = """
import os
import time

def main(ctx):
    gate = ctx.args[0]
    if len(ctx.args) > 1:
        ctx._emit_checkpoint({"kind": "stage", "stage": "s1", "path": "/p", "stages": {}})
    ctx.report_progress(waiting=gate, pid=os.getpid())
    while not os.path.exists(gate):
        time.sleep(0.02)
    return {"done": ctx.job_id, "attempt": ctx.attempt}
"""


class ScriptedLeader:
    """A leader of the cluster at ``session``'s root that a test scripts."""

    def __init__(self, session: Session, name: str = "jm-scripted") -> None:
        self.name = name
        self.session = session
        self.heartbeats: list[Heartbeat] = []
        self.ack_outcomes = True
        self.ack_checkpoints = True
        self.status = 200
        """Answer every heartbeat with this status (409/503: "not the leader")."""
        self.epoch_override: int | None = None
        self.keeps_reports = False
        """Keep a heartbeat's reports (no checkpoint, none ended) and say so (``taken``), as a
        JobManager does; an unchanged heartbeat is recorded as the reports it stands for."""
        self.idle_hold: float | None = None
        """Said with ``taken`` (the longest it holds an unchanged heartbeat); None says
        nothing, as a leader older than idle holds."""
        self.sent: list[Heartbeat] = []
        """Every heartbeat as its TaskManager sent it (an unchanged one without reports)."""
        self.sent_at: list[float] = []
        """When each of :attr:`sent` arrived (monotonic)."""
        self.resent: list[int] = []
        """Indexes in :attr:`sent` of the unchanged heartbeats answered ``resend``."""
        self._kept: Heartbeat | None = None
        self._forget = False
        self._last_epoch: int | None = None
        self._commands: list[Command] = []
        self._cond = threading.Condition()
        self._server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.address = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._serving = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.election = LeaderElection(session, name, self.address)

    # ------------------------------------------------------------------ life cycle

    def start(self) -> ScriptedLeader:
        """Serve and contend, and wait until granted."""
        self.contend()
        return self.wait_granted()

    def contend(self) -> ScriptedLeader:
        """Serve and contend, without waiting (another contender may lead now)."""
        self._serving.start()
        self.election.start()
        return self

    def wait_granted(self) -> ScriptedLeader:
        wait_until(lambda: self.election.leadership, GRANT_TIMEOUT, message=f"{self.name} leads")
        return self

    @property
    def leadership(self) -> Leadership:
        leadership = self.election.leadership
        assert leadership is not None, f"{self.name} does not lead"
        return leadership

    @property
    def epoch(self) -> int:
        return self.leadership.epoch

    def _epoch_held(self) -> int:
        """The epoch it leads with, or, once it stepped down, the last one it held: a deposed
        leader that has not noticed answers with its old epoch (never with an error)."""
        leadership = self.election.leadership
        if leadership is not None:
            self._last_epoch = leadership.epoch
        assert self._last_epoch is not None, f"{self.name} never led"
        return self._last_epoch

    def step_down(self) -> None:
        """Stop contending (leader/info goes); the HTTP server keeps answering, as a deposed
        leader that has not noticed would."""
        leadership = self.election.leadership
        if leadership is not None:
            self._last_epoch = leadership.epoch
        self.election.stop()

    def close(self) -> None:
        self.election.stop()
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ script

    def command(self, command: Command) -> None:
        with self._cond:
            self._commands.append(command)
            self._cond.notify_all()

    def reports(self, job_id: str, attempt: int = 1) -> list[AttemptReport]:
        """Every report of that attempt, in the order its TaskManager built the heartbeats.

        Not the order they arrived: a TaskManager's long poll, built before an attempt ended,
        can reach the leader after the notifier's heartbeat that reports the end.
        """
        with self._cond:
            beats = sorted(self.heartbeats, key=lambda beat: beat.seq or 0)
        return [
            report
            for beat in beats
            for report in beat.attempts
            if report.job_id == job_id and report.attempt == attempt
        ]

    def latest(self, job_id: str, attempt: int = 1) -> AttemptReport | None:
        reports = self.reports(job_id, attempt)
        return reports[-1] if reports else None

    def wait_phase(
        self, job_id: str, phase: AttemptPhase, timeout: float = 20.0, attempt: int = 1
    ) -> AttemptReport:
        def reached() -> AttemptReport | None:
            report = self.latest(job_id, attempt)
            return report if report is not None and report.phase is phase else None

        found = wait_until(reached, timeout, message=f"{job_id}/{attempt} {phase}")
        assert found is not None
        return found

    def wait_report(
        self, predicate: Callable[[AttemptReport], bool], job_id: str, timeout: float = 20.0
    ) -> AttemptReport:
        def matching() -> AttemptReport | None:
            report = self.latest(job_id)
            return report if report is not None and predicate(report) else None

        found = wait_until(matching, timeout, message=f"report of {job_id}")
        assert found is not None
        return found

    def heartbeats_since(self, count: int) -> list[Heartbeat]:
        with self._cond:
            return list(self.heartbeats[count:])

    def forgotten(self, job_id: str, since: int) -> bool:
        """A heartbeat after the ``since``-th one lists no attempt of ``job_id``."""
        return any(
            all(r.job_id != job_id for r in beat.attempts) for beat in self.heartbeats_since(since)
        )

    # ------------------------------------------------------------------ serving

    def forget(self) -> None:
        """Answer the next unchanged heartbeat ``resend``, as a leader that lost the reports;
        its index in :attr:`sent` lands in :attr:`resent`."""
        with self._cond:
            self._forget = True

    def _answer(self, beat: Heartbeat) -> HeartbeatReply:
        epoch = self.epoch_override or self._epoch_held()
        with self._cond:
            self.sent.append(beat)
            self.sent_at.append(time.monotonic())
            kept = self._kept
            if beat.unchanged:
                if kept is None or kept.digest != beat.digest or self._forget:
                    self._forget = False
                    self.resent.append(len(self.sent) - 1)
                    return HeartbeatReply(epoch=epoch, leader=self.name, resend=True)
                beat = beat.model_copy(update={"attempts": kept.attempts})
            self._kept = beat if self._keeps(beat) else None
            self.heartbeats.append(beat)
            if not self._commands and beat.wait > 0:
                self._cond.wait_for(lambda: bool(self._commands), timeout=beat.wait)
            commands, self._commands = self._commands, []
            taken = self._kept.digest if self._kept is not None else None
        acks = [ack for report in beat.attempts if (ack := self._ack(report)) is not None]
        reply = HeartbeatReply(epoch=epoch, leader=self.name, commands=commands, acks=acks)
        idle_hold = self.idle_hold if taken is not None else None
        return reply.model_copy(update={"taken": taken, "idle_hold": idle_hold})

    def _keeps(self, beat: Heartbeat) -> bool:
        return (
            self.keeps_reports
            and beat.digest is not None
            and not any(r.checkpoints or r.phase is not AttemptPhase.RUNNING for r in beat.attempts)
        )

    def _ack(self, report: AttemptReport) -> Ack | None:
        seq = max((c.seq for c in report.checkpoints), default=0) if self.ack_checkpoints else 0
        settled = report.phase in (AttemptPhase.ENDED, AttemptPhase.REJECTED)
        outcome = settled and self.ack_outcomes
        if not seq and not outcome:
            return None
        return Ack(
            job_id=report.job_id, attempt=report.attempt, checkpoint_seq=seq, outcome=outcome
        )


def first_after(
    leader: ScriptedLeader, since: int, matches: Callable[[Heartbeat], bool], timeout: float = 18.0
) -> float:
    """When the first heartbeat after the ``since``-th one that ``matches`` arrived
    (monotonic), waiting up to ``timeout``."""

    def found() -> float | None:
        arrived = len(leader.sent_at)  # appended with (after) sent
        return next(
            (leader.sent_at[i] for i in range(since, arrived) if matches(leader.sent[i])), None
        )

    arrived = wait_until(found, timeout, "the heartbeat")
    assert arrived is not None
    return arrived


class _QuietServer(ThreadingHTTPServer):
    """A TaskManager the test killed leaves its long poll unanswered: the reply's write then
    meets a closed connection, which is the test's doing, not a fault to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(leader: ScriptedLeader) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.path != HEARTBEAT_PATH:
                self._send(404, b"{}")
                return
            if leader.status != 200:
                self._send(leader.status, b'{"error": "not_leader"}')
                return
            self._send(200, leader._answer(Heartbeat.from_json(body)).to_json())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


# ---------------------------------------------------------------- jobs


def start_command(
    blobs: BlobStore,
    job_id: str,
    epoch: int,
    *,
    args: list[str],
    source: str = GATED,
    attempt: int = 1,
    checkpoint_dir: str = "/tmp/steward-test-checkpoints",
    slots: int = 1,
    spark_conf: dict[str, str] | None = None,
) -> StartAttempt:
    """Store a job graph for ``source`` and return the command that starts it."""
    artifact = build_artifact("gated_job.py", textwrap.dedent(source).encode())
    spec = JobSpec(job_id=job_id, args=args, slots=slots, spark_conf=spark_conf or {})
    graph = JobGraph(spec=spec, artifact=artifact, submitted_at=time.time())
    ref = blobs.put(blobs.unique_key(f"jobgraphs/{job_id}"), graph.to_json())
    return StartAttempt(
        job_id=job_id,
        attempt=attempt,
        epoch=epoch,
        job_graph_blob=ref.key,
        job_graph_sha256=ref.sha256,
        checkpoint_dir=checkpoint_dir,
    )


def run_gated(
    leader: ScriptedLeader, blobs: BlobStore, gates: Path, job_id: str, *args: str
) -> AttemptReport:
    """Run the GATED pipeline as ``job_id`` (attempt 1) to its end: start it, wait until it is
    reported RUNNING, open its gate (``gates/gate-<job_id>``: one per job, so a next job waits
    for its own), and return its ENDED report. ``args`` follow the gate's path."""
    gate = gates / f"gate-{job_id}"
    leader.command(start_command(blobs, job_id, leader.epoch, args=[str(gate), *args]))
    leader.wait_phase(job_id, AttemptPhase.RUNNING)
    return open_gate(leader, gate, job_id)


def open_gate(leader: ScriptedLeader, gate: Path, job_id: str) -> AttemptReport:
    """Let the GATED attempt 1 of ``job_id``, waiting on ``gate``, return; its ENDED report."""
    gate.touch()
    return leader.wait_phase(job_id, AttemptPhase.ENDED)
