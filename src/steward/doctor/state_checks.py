"""The invariants of docs/architecture.md, checked on one :class:`Snapshot` of the HA state.

Each check is a function of the snapshot that yields findings; :func:`check_state` runs them
all. A live cluster moves between two reads of one snapshot (a lease is taken a moment before
the status record says RUNNING, a result is recorded a moment before its pointer goes), so a
check that compares two records only reports a disagreement older than ``limits.grace``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from steward.ha.layout import OUTCOME_PREFIX
from steward.store.blob import BlobInfo
from steward.store.result_index import ResultNode
from steward.wire.doctor import Finding, Severity
from steward.wire.jobs import JobGraphPointer
from steward.wire.records import JobStatusRecord
from steward.wire.states import AttemptState, CleanupStatus

from .snapshot import Snapshot, Stored

RESTART = "restart the leading JobManager (or wait for the next leader): recovery rebuilds it"


@dataclass(frozen=True)
class Limits:
    grace: float = 60.0
    """Seconds two records may disagree while the cluster converges."""
    stuck_cleanup: float = 300.0
    """A DIRTY result older than this is a cleanup that is not getting done (its retries back
    off to 30 s, so ten of them fit)."""
    orphan_age: float = 7200.0
    """A blob no pointer names, older than this, is an orphan: younger ones may be a write in
    progress, and the leader deletes orphan job graphs after an hour."""


Check = Callable[[Snapshot, Limits], Iterator[Finding]]


def check_state(snapshot: Snapshot, limits: Limits) -> list[Finding]:
    """Every finding of every check, in the order of :data:`CHECKS`."""
    return [finding for check in CHECKS for finding in check(snapshot, limits)]


def _error(check: str, subject: str, message: str, action: str) -> Finding:
    return Finding(
        check=check, severity=Severity.ERROR, subject=subject, message=message, action=action
    )


def _warning(check: str, subject: str, message: str, action: str) -> Finding:
    return Finding(
        check=check, severity=Severity.WARNING, subject=subject, message=message, action=action
    )


# ---------------------------------------------------------------- leadership


def leadership(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """The epoch node exists and agrees with itself; leader/info names the current term."""
    epoch = snapshot.epoch
    if epoch is None:
        yield _error(
            "epoch-missing",
            "leader/epoch",
            "leader/epoch does not exist: no leader can be granted, and fencing has no token",
            "start a JobManager (it creates the layout); if one runs, ZooKeeper lost the node:"
            " check the ensemble's version and logs",
        )
        return
    if snapshot.epoch_data.strip() not in ("", str(epoch)):
        yield _warning(
            "epoch-data",
            "leader/epoch",
            f"leader/epoch's data says {snapshot.epoch_data.strip()!r} but its version (the"
            f" epoch) is {epoch}: someone wrote it outside Steward",
            "nothing to repair (the version is what counts); find who writes the cluster's"
            " znodes by hand",
        )
    info = snapshot.leader
    if info is not None and info.value is not None and info.value.epoch != epoch:
        yield _error(
            "leader-info-stale",
            "leader/info",
            f"leader/info names {info.value.contender} under epoch {info.value.epoch}, but the"
            f" current epoch is {epoch}: clients are sent to a leader that cannot write",
            RESTART,
        )
    if not snapshot.latches:
        yield _warning(
            "no-jobmanager",
            "leader/latch",
            "no JobManager is in line for leadership: nothing schedules or recovers jobs",
            "start a JobManager (steward jobmanager, or steward cluster start)",
        )
    elif info is None and snapshot.now - snapshot.latches[0].created > limits.grace:
        first = snapshot.latches[0].value
        yield _warning(
            "no-leader",
            "leader/info",
            f"no leader has published itself although {first.contender if first else '?'}"
            " is first in line: an election is stuck, or the leader cannot write",
            "read that JobManager's log (is its ZooKeeper session connected?)",
        )


def records_from_the_future(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """No record was written under an epoch newer than the current one (epochs only grow)."""
    if snapshot.epoch is None:
        return
    every: list[Stored[JobStatusRecord] | Stored[ResultNode] | Stored[JobGraphPointer]] = [
        *snapshot.statuses.values(),
        *snapshot.results.values(),
        *snapshot.pointers.values(),
    ]
    for stored in every:
        if stored.value is not None and (stored.value.epoch or 0) > snapshot.epoch:
            yield _error(
                "epoch-went-back",
                stored.path,
                f"written under epoch {stored.value.epoch}, newer than the current epoch"
                f" {snapshot.epoch}: leader/epoch went back (ZooKeeper lost writes, or the"
                " cluster's root was restored from an old copy)",
                "stop every JobManager and restore leader/epoch's version above every record's"
                " epoch before restarting (ask for help: fencing depends on it)",
            )


# ---------------------------------------------------------------- records


def corrupt_records(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """Every record decodes."""
    groups: list[tuple[str, dict[str, Stored[Any]]]] = [
        ("pointer", snapshot.pointers),
        ("result", snapshot.results),
        ("status", snapshot.statuses),
        ("lease", snapshot.leases),
        ("taskmanager", snapshot.taskmanagers),
    ]
    for kind, records in groups:
        for stored in records.values():
            if stored.error is not None:
                yield _error(
                    f"corrupt-{kind}",
                    stored.path,
                    f"unreadable: {stored.error}",
                    "the job it belongs to is failed on recovery (rule 6); delete the znode"
                    " once you have what you need from it",
                )


def pointers(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """A pointer exists iff the job must be recovered, and names a blob that reads back."""
    for job_id, stored in sorted(snapshot.pointers.items()):
        result = snapshot.results.get(job_id)
        if result is not None and result.value is not None:
            if result.value.status is CleanupStatus.CLEAN:
                yield _error(
                    "pointer-of-finished-job",
                    stored.path,
                    f"job {job_id} ended {result.value.state} and its cleanup is marked done,"
                    " yet its pointer is back: ZooKeeper lost the delete (or the pointer was"
                    " restored)",
                    "nothing restarts it (its result stands, rule 7); delete the pointer and"
                    " its blob, and check the ensemble's version",
                )
            continue  # DIRTY: cleanup removes it (dirty_results reports a stuck one)
        if stored.value is not None and stored.value.blob in snapshot.blob_errors:
            yield _error(
                "job-graph-unreadable",
                stored.path,
                f"job {job_id}'s graph cannot be read back from the blob storage:"
                f" {snapshot.blob_errors[stored.value.blob]}",
                "the job fails at the next recovery (rule 6); restore the blob from a backup"
                " of high-availability.storage-dir, or cancel and resubmit the job",
            )


def lost_jobs(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """A job with live state has a pointer or a result: otherwise no leader would recover it."""
    for job_id in sorted(snapshot.job_ids - set(snapshot.pointers) - set(snapshot.results)):
        status = snapshot.statuses.get(job_id)
        newest = max(
            [s.modified for s in [status] if s is not None]
            + [o.modified for o in snapshot.outcomes.get(job_id, [])]
            + [c.modified for c in snapshot.checkpoints.get(job_id, {}).values()],
            default=snapshot.now,
        )
        if snapshot.now - newest <= limits.grace:
            continue  # a submission between its pointer and its status, or a cleanup under way
        yield _error(
            "job-lost",
            f"job {job_id}",
            f"job {job_id} has state in ZooKeeper but neither a pointer nor a result: no"
            " leader will recover it, and no result says how it ended",
            "resubmit it with the same id if it must run (its checkpoints are kept); then"
            " check the ensemble's version and logs for lost writes",
        )


def dirty_results(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """No result stays DIRTY longer than the cleanup's retries allow."""
    for job_id, stored in sorted(snapshot.results.items()):
        entry = stored.value
        if entry is None or entry.status is not CleanupStatus.DIRTY:
            continue
        age = snapshot.now - entry.finished_at
        if age > limits.stuck_cleanup:
            yield _warning(
                "cleanup-stuck",
                stored.path,
                f"job {job_id} ended {age:.0f} s ago and its HA data is still being removed",
                "read the leader's log for 'cleanup failed job=" + job_id + "' (the blob"
                " storage unreachable or read-only?)",
            )


# ---------------------------------------------------------------- leases and attempts


def leases(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """A lease belongs to a registered TaskManager's session, and to a job that still runs."""
    for job_id, stored in sorted(snapshot.leases.items()):
        lease = stored.value
        if lease is None:
            continue
        member = snapshot.taskmanagers.get(lease.taskmanager)
        if member is None or member.owner != stored.owner:
            yield _error(
                "lease-without-taskmanager",
                stored.path,
                f"attempt {lease.attempt} of job {job_id} holds its lease for"
                f" {lease.taskmanager}, which is not registered under the lease's session:"
                " the job cannot be restarted while it stays",
                "stop the process that owns the session (a TaskManager that lost its"
                " registration); the lease goes with its session",
            )
        result = snapshot.results.get(job_id)
        if (
            result is not None
            and result.value is not None
            and snapshot.now - result.value.finished_at > limits.grace
        ):
            yield _error(
                "lease-of-ended-job",
                stored.path,
                f"job {job_id} ended {result.value.state}, yet attempt {lease.attempt} on"
                f" {lease.taskmanager} still holds its lease: some process of it still runs",
                f"look at {lease.taskmanager}'s attempts (steward logs {job_id}); killing the"
                " attempt's processes releases the lease",
            )


def attempts(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """An attempt the status calls RUNNING holds the job's lease (rule 3)."""
    for job_id, stored in sorted(snapshot.statuses.items()):
        record = stored.value
        if record is None or not record.attempts or job_id in snapshot.results:
            continue
        current = record.attempts[-1]
        if current.state is not AttemptState.RUNNING:
            continue
        if snapshot.now - stored.modified <= limits.grace:
            continue
        lease = snapshot.leases.get(job_id)
        ended = f"{OUTCOME_PREFIX}{current.number}"
        if lease is None and any(o.path.endswith(ended) for o in snapshot.outcomes.get(job_id, [])):
            continue  # it ended and said so with its lease's release: the leader has yet to read it
        if lease is None:
            yield _error(
                "attempt-without-lease",
                stored.path,
                f"attempt {current.number} of job {job_id} is RUNNING on"
                f" {current.taskmanager} without the job's lease: the leader should have"
                " seen it end",
                RESTART,
            )
        elif lease.value is not None and lease.value.attempt != current.number:
            yield _warning(
                "lease-of-another-attempt",
                lease.path,
                f"the lease of job {job_id} is attempt {lease.value.attempt}'s but the status"
                f" says attempt {current.number} runs",
                RESTART,
            )


def outcomes(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """An attempt's outcome record is acknowledged and dropped by the leader."""
    for job_id, records in sorted(snapshot.outcomes.items()):
        for stored in records:
            if snapshot.now - stored.created > limits.grace:
                yield _warning(
                    "outcome-not-acknowledged",
                    stored.path,
                    f"an attempt of job {job_id} ended long ago and the leader has not taken"
                    " its outcome",
                    "read the leader's log for the job; " + RESTART,
                )


# ---------------------------------------------------------------- blobs


def orphan_blobs(snapshot: Snapshot, limits: Limits) -> Iterator[Finding]:
    """Every job graph and checkpoint blob older than ``orphan_age`` is named by a pointer."""
    if snapshot.storage_error is not None:
        yield _warning(
            "storage-unreadable",
            "high-availability.storage-dir",
            f"the blob storage could not be listed: {snapshot.storage_error}",
            "check high-availability.storage-dir and its credentials from this host",
        )
        return
    named = {p.value.blob for p in snapshot.pointers.values() if p.value is not None}
    named |= {
        c.value.blob
        for per_job in snapshot.checkpoints.values()
        for c in per_job.values()
        if c.value is not None
    }
    unreadable = {
        stored.path.rsplit("/", 1)[-1]
        for group in (snapshot.pointers,)
        for stored in group.values()
        if stored.error is not None
    }
    blobs: list[BlobInfo] = [*snapshot.graph_blobs, *snapshot.checkpoint_blobs]
    for info in blobs:
        job_dir = info.key.split("/")[1:2]
        if info.key in named or (job_dir and job_dir[0] in unreadable):
            continue
        if snapshot.now - info.modified > limits.orphan_age:
            yield _warning(
                "orphan-blob",
                info.key,
                "no pointer names this blob: a write that lost its connection, or a removal"
                " that stopped half-way",
                "nothing reads it; delete it to free the space (the leader's garbage"
                " collection removes orphan job graphs)",
            )


CHECKS: tuple[Check, ...] = (
    leadership,
    records_from_the_future,
    corrupt_records,
    pointers,
    lost_jobs,
    dirty_results,
    leases,
    attempts,
    outcomes,
    orphan_blobs,
)
