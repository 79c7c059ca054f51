"""``steward doctor``: read the HA state once, check every invariant, report the findings.

:func:`examine` is what ``GET /v1/doctor`` runs inside a JobManager (leader or standby, on
its own session) and what ``steward doctor --offline`` runs with a session of its own. It
only reads: nothing it finds is repaired behind the operator's back; each finding says
what to do.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.wire.doctor import DoctorReport, Finding, Severity
from steward.zookeeper.server_clock import servers_of

from .clock_checks import check_server_clock
from .result_checks import check_results
from .snapshot import read_snapshot
from .state_checks import Limits, check_state
from .zookeeper_checks import ask, check_servers, check_session

log = logging.getLogger(__name__)


def examine(
    session: Session,
    blobs: BlobStore,
    cluster_id: str,
    *,
    limits: Limits | None = None,
    lost_writes: int = 0,
    served_by: str = "",
    verify_blobs: bool = False,
) -> DoctorReport:
    """Every finding about the cluster under ``session``'s root (CoordinationError if
    ZooKeeper cannot be read); ``verify_blobs`` reads every pointer's blob back."""
    limits = limits or Limits()
    hosts = servers_of(session.quorum)
    with ThreadPoolExecutor(max_workers=max(1, len(hosts)), thread_name_prefix="doctor") as pool:
        asked = [pool.submit(ask, host, port) for host, port in hosts]
        snapshot = read_snapshot(session, blobs, verify_blobs=verify_blobs)
        servers = [future.result() for future in asked]
    findings = [
        *check_state(snapshot, limits),
        *check_results(snapshot, limits),
        *check_servers(servers, session.session_timeout),
        *check_session(session),
        *check_server_clock(servers, session),
    ]
    if lost_writes:
        findings.append(
            Finding(
                check="zookeeper-lost-writes",
                severity=Severity.ERROR,
                subject=served_by or "this JobManager",
                message=f"{lost_writes} acknowledged write(s) (job results) were found missing"
                " by this JobManager's cleanup since it started: ZooKeeper lost them",
                action="check the ensemble's version (zookeeper-version) and its logs; the"
                " leader's log names each job ('result lost by zookeeper')",
            )
        )
    log.info("doctor examined cluster=%s findings=%d", cluster_id, len(findings))
    return DoctorReport(
        cluster_id=cluster_id,
        checked_at=snapshot.now,
        epoch=snapshot.epoch,
        jobs=len(snapshot.job_ids),
        findings=findings,
        servers=servers,
        served_by=served_by,
    )
