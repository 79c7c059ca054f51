"""One reading of a cluster's HA state, for the checks: every znode the invariants are about.

The reading is not atomic (ZooKeeper has no snapshot read), so a check that compares two
records leaves a grace period for what a live cluster does between two reads. A record that
does not decode is kept as its error: a corrupt record is itself a finding, never a crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from steward.errors import StewardError
from steward.ha.layout import OUTCOME_PREFIX, Layout
from steward.ha.session import Session
from steward.store import result_index, zk
from steward.store.blob import BlobInfo, BlobRef, BlobStore
from steward.store.checkpoints import BLOB_PREFIX as CHECKPOINT_BLOBS
from steward.store.job_graphs import BLOB_PREFIX as GRAPH_BLOBS
from steward.store.result_index import ResultNode
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import decode_pointer, decode_status
from steward.wire.records import (
    CheckpointPointer,
    ContenderInfo,
    ExecutionLease,
    JobStatusRecord,
    LeaderInfo,
    TaskManagerInfo,
)
from steward.wire.values import Payload

P = TypeVar("P", bound=Payload)
V = TypeVar("V", bound=Payload | ResultNode)

PARALLELISM = 8
"""Reads in flight at once (as a new leader's recovery reads its jobs)."""


@dataclass(frozen=True)
class Stored(Generic[V]):
    """A znode as read: its decoded payload or why it did not decode, and its stat's facts."""

    path: str
    value: V | None
    error: str | None
    created: float
    """Wall-clock seconds of the znode's creation (its ctime)."""
    modified: float
    owner: int
    """The session that owns it if ephemeral, else 0."""


@dataclass
class Snapshot:
    """What the checks look at; built by :func:`read_snapshot`."""

    now: float
    epoch: int | None
    """``leader/epoch``'s version: the current epoch (None: the node is missing)."""
    epoch_data: str
    leader: Stored[LeaderInfo] | None
    latches: list[Stored[ContenderInfo]]
    """In line order (lowest sequence first)."""
    pointers: dict[str, Stored[JobGraphPointer]]
    results: dict[str, Stored[ResultNode]]
    """Result indexes, and legacy entries still holding their body (both decoded)."""
    statuses: dict[str, Stored[JobStatusRecord]]
    leases: dict[str, Stored[ExecutionLease]]
    taskmanagers: dict[str, Stored[TaskManagerInfo]]
    job_nodes: set[str]
    """Jobs with a ``jobs/<id>`` node (status, checkpoints, outcomes)."""
    outcomes: dict[str, list[Stored[Any]]]
    """Outcome records per job (their payloads are not decoded; only age matters)."""
    checkpoints: dict[str, dict[int, Stored[CheckpointPointer]]]
    graph_blobs: list[BlobInfo] = field(default_factory=list)
    checkpoint_blobs: list[BlobInfo] = field(default_factory=list)
    blob_errors: dict[str, str] = field(default_factory=dict)
    """A pointer's key -> why its blob could not be read back (missing, corrupt)."""
    dirty_marks: set[str] = field(default_factory=set)
    """Jobs under ``dirty-results/``: the DIRTY results a new leader resumes."""
    result_body_errors: dict[str, str] = field(default_factory=dict)
    """A job -> why its result's body could not be read back (only when verifying blobs)."""
    storage_error: str | None = None
    """Why the blob storage could not be listed (then no blob check ran)."""

    @property
    def job_ids(self) -> set[str]:
        return set(self.pointers) | set(self.results) | set(self.statuses) | self.job_nodes


def read_snapshot(session: Session, blobs: BlobStore, *, verify_blobs: bool = False) -> Snapshot:
    """Read the HA state under the session's root; raises CoordinationError if ZooKeeper fails.

    A pointer's blob is looked for in the storage's listing (one listing for all of them);
    ``verify_blobs`` also reads each one back and checks its checksum (a read per job: for
    ``steward doctor --verify-blobs``, not for a page that refreshes)."""
    client, layout = session.client, session.layout
    snapshot = _read_znodes(client, layout)
    with ThreadPoolExecutor(PARALLELISM, thread_name_prefix="doctor-blobs") as pool:
        _read_blobs(blobs, snapshot, pool, verify=verify_blobs)
    return snapshot


def _read_znodes(client: Any, layout: Layout) -> Snapshot:
    """Every znode, read a group at a time with the requests pipelined (zk.read_many)."""
    epoch_found = zk.read(client, layout.leader_epoch)
    snapshot = Snapshot(
        now=time.time(),
        epoch=epoch_found[1].version if epoch_found else None,
        epoch_data=epoch_found[0].decode("utf-8", "replace") if epoch_found else "",
        leader=_read(client, layout.leader_info, LeaderInfo),
        latches=[
            stored
            for name in sorted(zk.children(client, layout.leader_latch), key=_sequence)
            if (stored := _read(client, f"{layout.leader_latch}/{name}", ContenderInfo))
        ],
        pointers=_read_all(client, layout.jobgraphs, layout.jobgraph, decode_pointer),
        results=_read_results(client, layout),
        statuses=_read_all(client, layout.jobs, layout.job_status, decode_status),
        leases=_read_all(
            client, layout.executions, layout.execution, lambda d, _: ExecutionLease.from_json(d)
        ),
        taskmanagers=_read_members(client, layout),
        job_nodes=set(zk.job_children(client, layout.jobs)),
        outcomes={},
        checkpoints={},
    )
    _read_job_nodes(client, layout, sorted(snapshot.job_nodes), snapshot)
    snapshot.dirty_marks = set(zk.job_children(client, layout.dirty_results))
    return snapshot


def _read_job_nodes(client: Any, layout: Layout, nodes: list[str], snapshot: Snapshot) -> None:
    """Each job's outcome records and checkpoint pointers."""
    names = zk.children_many(client, [layout.job(job_id) for job_id in nodes])
    ids = zk.children_many(client, [layout.checkpoints(job_id) for job_id in nodes])
    outcome_paths = [
        (job_id, f"{layout.job(job_id)}/{name}")
        for job_id, children in zip(nodes, names, strict=True)
        for name in children
        if name.startswith(OUTCOME_PREFIX)
    ]
    for (job_id, path), found in zip(
        outcome_paths, zk.read_many(client, [path for _job, path in outcome_paths]), strict=True
    ):
        if found is not None:
            snapshot.outcomes.setdefault(job_id, []).append(_stored(path, found, None))
    pointer_paths = [
        (job_id, int(name), layout.checkpoint(job_id, int(name)))
        for job_id, children in zip(nodes, ids, strict=True)
        for name in children
        if name.isdigit()
    ]
    for (job_id, number, path), found in zip(
        pointer_paths, zk.read_many(client, [p for _j, _n, p in pointer_paths]), strict=True
    ):
        if found is not None:
            snapshot.checkpoints.setdefault(job_id, {})[number] = _decoded(
                path, found, CheckpointPointer.from_json
            )


def _read_blobs(
    blobs: BlobStore, snapshot: Snapshot, pool: ThreadPoolExecutor, *, verify: bool
) -> None:
    try:
        snapshot.graph_blobs = blobs.list(GRAPH_BLOBS)
        snapshot.checkpoint_blobs = blobs.list(CHECKPOINT_BLOBS)
    except (StewardError, OSError) as exc:
        snapshot.storage_error = str(exc)
        return
    named: list[JobGraphPointer | CheckpointPointer] = [
        p.value for p in snapshot.pointers.values() if p.value is not None
    ]
    named += [
        c.value
        for per_job in snapshot.checkpoints.values()
        for c in per_job.values()
        if c.value is not None
    ]
    listed = {info.key for info in snapshot.graph_blobs + snapshot.checkpoint_blobs}
    for pointer in named:
        if pointer.blob not in listed:
            snapshot.blob_errors[pointer.blob] = f"blob {pointer.blob} is missing from {blobs.url}"
    if verify:
        _verify_result_bodies(blobs, snapshot, pool)
        present = [pointer for pointer in named if pointer.blob in listed]
        for pointer, error in zip(
            present, pool.map(lambda p: _verify(blobs, p), present), strict=True
        ):
            if error is not None:
                snapshot.blob_errors[pointer.blob] = error


def _verify_result_bodies(blobs: BlobStore, snapshot: Snapshot, pool: ThreadPoolExecutor) -> None:
    """Read every result body back (a read per result: ``--verify-blobs`` only)."""
    indexes = [s.value for s in snapshot.results.values() if s.value and s.value.index]
    refs = [BlobRef(n.body_key or "", n.index.sha256 if n.index else "") for n in indexes]
    for node, error in zip(
        indexes, pool.map(lambda ref: _verify_ref(blobs, ref), refs), strict=True
    ):
        if error is not None:
            snapshot.result_body_errors[node.job_id] = error


def _verify_ref(blobs: BlobStore, ref: BlobRef) -> str | None:
    try:
        blobs.get(ref)
    except (StewardError, OSError) as exc:
        return str(exc)
    return None


def _read_results(client: Any, layout: Layout) -> dict[str, Stored[ResultNode]]:
    ids = zk.job_children(client, layout.results)
    paths = [layout.result(job_id) for job_id in ids]
    found: dict[str, Stored[ResultNode]] = {}
    for job_id, path, read in zip(ids, paths, zk.read_many(client, paths), strict=True):
        if read is None:
            continue  # removed meanwhile (retention)
        try:
            value, error = result_index.decode(job_id, *read), None
        except StewardError as exc:
            value, error = None, str(exc)
        found[job_id] = _stored(path, (value, read[1]), error)
    return found


def _verify(blobs: BlobStore, pointer: JobGraphPointer | CheckpointPointer) -> str | None:
    """Why ``pointer``'s blob does not read back as the one it names; None if it does."""
    try:
        blobs.get(_ref(pointer))
    except (StewardError, OSError) as exc:
        return str(exc)
    return None


def _ref(pointer: JobGraphPointer | CheckpointPointer) -> BlobRef:
    return BlobRef(pointer.blob, pointer.sha256)


def _read_all(
    client: Any, parent: str, path_of: Callable[[str], str], decode: Callable[[bytes, str], P]
) -> dict[str, Stored[P]]:
    """Each job's record under ``parent``, ``decode``d with its job id (the path's)."""
    ids = zk.job_children(client, parent)
    paths = [path_of(job_id) for job_id in ids]
    return {
        job_id: _decoded(path, found, _of_job(decode, job_id))
        for job_id, path, found in zip(ids, paths, zk.read_many(client, paths), strict=True)
        if found is not None
    }


def _read_members(client: Any, layout: Layout) -> dict[str, Stored[TaskManagerInfo]]:
    found: dict[str, Stored[TaskManagerInfo]] = {}
    for name in zk.children(client, layout.taskmanagers):
        stored = _read(client, f"{layout.taskmanagers}/{name}", TaskManagerInfo)
        if stored is not None:
            found[name] = stored
    return found


def _of_job(decode: Callable[[bytes, str], P], job_id: str) -> Callable[[bytes], P]:
    return lambda data: decode(data, job_id)


def _decoded(path: str, found: tuple[bytes, Any], decode: Callable[[bytes], P]) -> Stored[P]:
    try:
        value, error = decode(found[0]), None
    except StewardError as exc:
        value, error = None, str(exc)
    return _stored(path, (value, found[1]), error)


def _stored(path: str, found: tuple[Any, Any], error: str | None) -> Stored[Any]:
    value, stat = found
    return Stored(
        path,
        value,
        error,
        created=stat.ctime / 1000.0,
        modified=stat.mtime / 1000.0,
        owner=int(stat.ephemeralOwner),
    )


def _read(client: Any, path: str, kind: type[P]) -> Stored[P] | None:
    found = zk.read(client, path)
    return None if found is None else _decoded(path, found, kind.from_json)  # gone meanwhile


def _sequence(name: str) -> tuple[int, str]:
    digits = name.rsplit("-", 1)[-1]
    return (int(digits) if digits.isdigit() else 1 << 62, name)
