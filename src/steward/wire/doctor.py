"""What ``steward doctor`` reports: findings about the HA state, and the ZooKeeper servers.

``GET /v1/doctor`` answers a :class:`DoctorReport`; ``steward doctor --json`` prints the same
document whether it asked a JobManager or read ZooKeeper itself (``--offline``).
"""

from __future__ import annotations

import enum

from pydantic import Field

from steward.wire.values import Value


class Severity(enum.StrEnum):
    """How bad a finding is. Errors and warnings make ``steward doctor`` exit 1."""

    ERROR = "error"
    """An invariant is broken: a job may be lost, doubled or resurrected, or data is gone."""
    WARNING = "warning"
    """Something to look at: it may pass (an election under way) or cost later (a stuck cleanup)."""


class DoctorQuery(Value):
    """``GET /v1/doctor``'s query: an unknown parameter is a 400, not ignored."""

    verify_blobs: bool = Field(
        default=False,
        description="also read every job graph and checkpoint blob back and check its checksum"
        " (one read per blob; without it, blobs are looked for in the storage's listing)",
    )


class Finding(Value):
    """One broken or doubtful invariant, with what to do about it."""

    check: str = Field(description="the check that found it, e.g. 'lease-without-taskmanager'")
    severity: Severity
    subject: str = Field(description="what it is about: a job id, a znode, a blob, a server")
    message: str = Field(description="what is wrong, in a sentence")
    action: str = Field(description="what to do about it")


class ServerReport(Value):
    """One ZooKeeper server of the connect string, as its four-letter words describe it."""

    address: str
    answered: bool = Field(description="it answered `srvr` (4lw.commands.whitelist has srvr)")
    version: str | None = None
    mode: str | None = Field(default=None, description="standalone, leader, follower...")
    tick_time_ms: int | None = Field(default=None, description="from `conf`, when allowed")
    sync_limit: int | None = Field(
        default=None, description="from `conf`: ticks a follower answers without its leader"
    )
    min_session_timeout_ms: int | None = None
    max_session_timeout_ms: int | None = None


class DoctorReport(Value):
    """``GET /v1/doctor``: every finding (empty when every invariant holds) and the servers."""

    cluster_id: str
    checked_at: float = Field(description="wall-clock time (Unix seconds) of the reading")
    epoch: int | None = Field(description="the current leadership epoch; None: no epoch node")
    jobs: int = Field(description="jobs with HA state read: pointers, statuses, results")
    findings: list[Finding] = Field(default_factory=list)
    servers: list[ServerReport] = Field(default_factory=list)
    served_by: str = Field(default="", description="the JobManager that ran it; '' offline")

    @property
    def healthy(self) -> bool:
        return not self.findings
