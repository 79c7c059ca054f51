r"""The TaskManager <-> leader protocol: one HTTP heartbeat carries reports one way, commands back.

A TaskManager ``POST``\ s a :class:`Heartbeat` to ``/internal/v1/heartbeat`` of the leader it
found through leader retrieval, a new one as soon as the last is answered and at most one per
``heartbeat.interval`` (each held up to that, or up to the idle hold: below), and at once
whenever one of its attempts changes. The leader answers with a :class:`HeartbeatReply`: its
epoch, the commands for this TaskManager (start an attempt, cancel one) and acknowledgements.
The request may ask the leader to hold the reply up to ``wait`` seconds until a command is
queued (long polling), so a command reaches an idle TaskManager at once without a busy
heartbeat.

Reliable delivery without a second channel
    Each attempt's checkpoint events are numbered (``seq`` from 1, per attempt) and the
    outcome is sent in every heartbeat until the leader acknowledges it: a report that a
    leader dies before recording is simply sent again to the next leader. The leader
    acknowledges a checkpoint only once it is in the CompletedCheckpointStore, and the outcome
    only once the job's status (or its result) records it. A TaskManager forgets an ended
    attempt only after its outcome is acknowledged *and* its lease is released.

Unchanged reports
    Every heartbeat carries ``digest`` (:func:`reports_digest` of its attempts). A reply's
    ``taken`` says that leader keeps those reports; until they change, the TaskManager's
    heartbeats to the leader of that epoch leave them out (``unchanged``). A leader that does
    not hold them answers ``resend`` and takes nothing: the next heartbeat carries them in
    full. An older leader never says ``taken``, and an older TaskManager sends no digest, so
    either side with an older one sends or takes every report in full.

Idle holds
    A reply that says ``taken`` also says ``idle_hold``: how long that leader holds an
    unchanged heartbeat while nothing is in flight to its TaskManager. The TaskManager's
    unchanged heartbeats to it ask that long a ``wait`` (at most its own
    ``heartbeat.idle-hold``), so an idle TaskManager sends one request per hold instead of one
    per interval; commands still come back at once on the held reply, and every change still
    goes at once in a heartbeat of its own. The leader holds a heartbeat longer than its
    ``heartbeat.interval`` only while it keeps that TaskManager's reports and no start command
    it collected is unreported (the expiry of a lost start needs a heartbeat per interval). An
    older leader never says ``idle_hold``, so it never gets a longer ``wait``; an older
    TaskManager never asks one.

Epochs
    A reply, and every command in it, carries the leader's epoch. A TaskManager ignores a reply
    whose epoch is older than the newest it has seen (a deposed leader), and adopts a newer one
    (that is how a new leader's adoption reaches it: the attempts keep running). A start command
    is fenced once more where it matters: the execution lease is created in a transaction that
    checks that epoch in ZooKeeper (rule 3).
"""

from __future__ import annotations

import enum
import hashlib
from typing import Annotated, ClassVar, Literal

from pydantic import (
    Field,
)

from steward.wire.records import MAX_EARLIER_APPS, ErrorInfo, SparkApp
from steward.wire.runner_protocol import CheckpointEvent, FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from steward.wire.values import JsonValue, Payload, Value

HEARTBEAT_PATH = "/internal/v1/heartbeat"


class Rejection(enum.StrEnum):
    LEASE_HELD = "lease-held"
    """Another attempt of the job still holds the execution lease."""
    STALE_EPOCH = "stale-epoch"
    """The command's epoch is not the current leader epoch."""
    NO_SLOT = "no-slot"
    """The TaskManager has no free slot for it (its view and the leader's differed)."""
    FENCED = "fenced"
    """The TaskManager cannot run it now: it is fencing itself (its ZooKeeper connection is
    suspended or lost), or a store it needs did not answer (ZooKeeper as it took the lease,
    the blob storage as it fetched the job): nothing ran. Kept one value so that an older
    leader reads every rejection a newer TaskManager sends."""


class ReportedCheckpoint(Value):
    seq: int = Field(ge=1)
    event: CheckpointEvent


class AttemptReport(Value):
    """One attempt as its TaskManager sees it."""

    job_id: str
    attempt: int = Field(ge=1)
    epoch: int = Field(ge=1, description="epoch of the leader that started it")
    phase: AttemptPhase
    pid: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    progress: dict[str, JsonValue] | None = Field(
        default=None, description="the latest ctx.report_progress(...) (best effort)"
    )
    checkpoints: list[ReportedCheckpoint] = Field(
        default_factory=list, description="unacknowledged checkpoint events, by seq"
    )
    outcome: FinishedEvent | FailedEvent | None = Field(
        default=None,
        description="set when ENDED: the runner's final event, or a failed event the"
        " TaskManager made up when the runner exited without one",
    )
    rejection: Rejection | None = None
    rejection_message: str | None = None
    lease_released: bool = False
    spark_app: SparkApp | None = None


class Heartbeat(Payload):
    kind_name: ClassVar[str] = "heartbeat"
    taskmanager: str
    address: str
    slots: int = Field(ge=0)
    epoch: int = Field(ge=0, description="the newest leader epoch this TaskManager has seen")
    attempts: list[AttemptReport] = Field(default_factory=list)
    wait: float = Field(default=0.0, ge=0, le=60, description="long-poll: seconds to hold")
    session: int | None = Field(
        default=None,
        ge=0,
        description="the ZooKeeper session that owns its registration: which incarnation of"
        " this TaskManager id sends it (None: an older TaskManager that does not say)",
    )
    seq: int | None = Field(
        default=None,
        ge=1,
        description="numbers this TaskManager process's heartbeats from 1, in the order it"
        " built them (None: an older TaskManager)",
    )
    settled: int | None = Field(
        default=None,
        ge=0,
        description="every heartbeat of this process up to this seq had its reply handled (its"
        " start commands admitted) or given up before this one was built: a start one of them"
        " collected is in this heartbeat's attempts if it was admitted",
    )
    digest: str | None = Field(
        default=None,
        max_length=64,
        description="the digest of this TaskManager's attempts' reports (:func:`reports_digest`)"
        " as it built them (None: an older TaskManager that never leaves them out)",
    )
    unchanged: bool = Field(
        default=False,
        description="``attempts`` left out: they are those of digest ``digest``, which this"
        " leader took and said so (``HeartbeatReply.taken``)",
    )


class StartAttempt(Value):
    """Run attempt ``attempt`` of ``job_id``: fetch the graph, take the lease, spawn the runner."""

    command: Literal["start"] = "start"
    job_id: str
    attempt: int = Field(ge=1)
    epoch: int = Field(ge=1)
    job_graph_blob: str
    job_graph_sha256: str
    checkpoint_dir: str
    is_recovery: bool = False
    completed_stages: dict[str, str] = Field(default_factory=dict)
    last_checkpoint: dict[str, JsonValue] | None = None
    earlier_spark_apps: list[str] = Field(
        default_factory=list,
        max_length=MAX_EARLIER_APPS,
        description="Spark application ids recorded for the job's earlier attempts: the"
        " runner kills those still on a standalone master before it runs the job's code",
    )


class CancelAttempt(Value):
    """Stop attempt ``attempt`` of ``job_id``: SIGTERM the runner, SIGKILL the group after grace."""

    command: Literal["cancel"] = "cancel"
    job_id: str
    attempt: int = Field(ge=1)
    epoch: int = Field(ge=1)
    grace: float = Field(default=10.0, ge=0)


Command = Annotated[StartAttempt | CancelAttempt, Field(discriminator="command")]


class Ack(Value):
    job_id: str
    attempt: int = Field(ge=1)
    checkpoint_seq: int = Field(default=0, ge=0, description="checkpoints up to this seq")
    outcome: bool = False
    """The outcome (or rejection) is recorded: the TaskManager may forget the attempt."""


class HeartbeatReply(Payload):
    kind_name: ClassVar[str] = "heartbeat reply"
    epoch: int = Field(ge=1)
    leader: str
    commands: list[Command] = Field(default_factory=list)
    acks: list[Ack] = Field(default_factory=list)
    taken: str | None = Field(
        default=None,
        description="the digest of the reports this leader took and keeps: taking them again"
        " would change nothing, so while they stay the same the TaskManager may send them as"
        " unchanged (None: send them in full)",
    )
    resend: bool = Field(
        default=False,
        description="an unchanged heartbeat named reports this leader does not hold (it is"
        " new, or forgot this TaskManager): nothing was taken; send them in full at once",
    )
    idle_hold: float | None = Field(
        default=None,
        gt=0,
        le=60,
        description="with ``taken``: the longest this leader holds an unchanged heartbeat it"
        " keeps while no start command to this TaskManager is in flight (``heartbeat.idle-hold``):"
        " the TaskManager may ask that long a ``wait`` for them (None: an older leader, which"
        " gets ``heartbeat.interval``)",
    )


class OutcomeRecord(Payload):
    """``jobs/<job-id>/outcome-<attempt>``: an attempt's outcome, made durable as its lease goes.

    A TaskManager deletes an ended attempt's lease and creates this record in one multi-op, so
    an outcome no leader has heard yet outlives the TaskManager (a crash right after the
    release). A leader about to count the attempt LOST reads it and settles the attempt from
    it instead. The TaskManager deletes its record once the leader acknowledged the outcome
    (so the job's status or result holds it); the job's cleanup removes any left behind.
    """

    kind_name: ClassVar[str] = "attempt outcome"
    job_id: str
    attempt: int = Field(ge=0)
    taskmanager: str
    epoch: int = Field(ge=1, description="epoch of the leader that started the attempt")
    outcome: Annotated[FinishedEvent | FailedEvent, Field(discriminator="event")]


def reports_digest(attempts: list[AttemptReport]) -> str:
    """The digest an unchanged heartbeat names its attempts' reports by: equal for equal
    reports (a false difference only costs a full heartbeat)."""
    encoded = b"\n".join(report.model_dump_json().encode() for report in attempts)
    return hashlib.blake2b(encoded, digest_size=16).hexdigest()


def lost_outcome(message: str) -> FailedEvent:
    """The failed event a TaskManager reports for a runner that exited without a final one."""
    return FailedEvent(error=ErrorInfo(type="steward.AttemptLost", message=message))
