"""What a warm standby hands its recovery (:class:`WarmSnapshot`), and how the standby
decodes what it reads into it (:mod:`steward.store.warm_records` keeps it current)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from steward.errors import CorruptStateError
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import decode_pointer, decode_status
from steward.wire.records import ExecutionLease, JobStatusRecord

STATUS = "status"
POINTER = "pointer"
LEASE = "lease"

Held = JobGraphPointer | JobStatusRecord | ExecutionLease


@dataclass(frozen=True)
class WarmSnapshot:
    """What the standby held at the grant, vouched for: a job's pointer and record as
    ZooKeeper had them after the fencing write (a job absent here is read from ZooKeeper),
    and every readable lease as they were then."""

    pointers: dict[str, JobGraphPointer] = field(default_factory=dict)
    records: dict[str, JobStatusRecord] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    leases: dict[str, ExecutionLease] = field(default_factory=dict)

    def vouches(self, job_id: str) -> bool:
        return job_id in self.pointers and job_id in self.records

    def __len__(self) -> int:
        return sum(1 for job_id in self.pointers if job_id in self.records)


def decode(kind: str, job_id: str, read: tuple[bytes, Any]) -> tuple[Held | None, int]:
    """The decoded pointer, record or lease and the znode's version; None if it is unreadable
    (a corrupt lease is left out, as :meth:`ExecutionLeases.all` leaves it out)."""
    data, stat = read
    version = int(stat.version)
    try:
        decoded = _DECODERS[kind](bytes(data), job_id)
    except CorruptStateError:  # UnsupportedSchemaError too: recovery judges it
        return None, version
    if isinstance(decoded, JobStatusRecord) and decoded.job_id != job_id:
        return None, version
    return decoded, version


def _lease(data: bytes, _job_id: str) -> ExecutionLease:
    return ExecutionLease.from_json(data)


_DECODERS: dict[str, Callable[[bytes, str], Held]] = {
    STATUS: decode_status,
    POINTER: decode_pointer,
    LEASE: _lease,
}
