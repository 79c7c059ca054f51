"""Checks of the JobResultStore's layout (rule 7): indexes in ZooKeeper, bodies in blobs.

- ``result-in-zookeeper``: entries written before results moved to blob storage still hold
  their whole body in ZooKeeper; the leader migrates them when it takes office, so a count
  that stays is a migration that does not finish.
- ``result-body-unreadable``: an index names a body that is missing or damaged (read back
  only with ``--verify-blobs``: a read per result).
- ``dirty-result-unmarked``: a DIRTY index without its ``dirty-results/<job-id>`` mark, which
  is all a new leader looks at to resume cleanups: its cleanup would never be finished.
"""

from __future__ import annotations

from collections.abc import Iterator

from steward.wire.doctor import Finding, Severity
from steward.wire.states import CleanupStatus

from .snapshot import Snapshot
from .state_checks import Limits


def check_results(snapshot: Snapshot, limits: Limits) -> list[Finding]:
    return [*_legacy_entries(snapshot), *_unreadable_bodies(snapshot), *_unmarked(snapshot)]


def _unmarked(snapshot: Snapshot) -> Iterator[Finding]:
    for job_id, stored in sorted(snapshot.results.items()):
        node = stored.value
        if node is None or node.index is None or node.status is not CleanupStatus.DIRTY:
            continue
        if job_id not in snapshot.dirty_marks:
            yield Finding(
                check="dirty-result-unmarked",
                severity=Severity.ERROR,
                subject=stored.path,
                message=f"job {job_id}'s result is DIRTY without its mark in dirty-results/:"
                " no new leader resumes its cleanup (ZooKeeper lost a write?)",
                action=f"create the empty znode dirty-results/{job_id} (zkCli.sh create), or"
                " restart the leader: its first round queues every DIRTY result found",
            )


def _legacy_entries(snapshot: Snapshot) -> Iterator[Finding]:
    legacy = sorted(
        job_id
        for job_id, stored in snapshot.results.items()
        if stored.value is not None and stored.value.legacy is not None
    )
    if legacy:
        yield Finding(
            check="result-in-zookeeper",
            severity=Severity.WARNING,
            subject=f"{len(legacy)} result(s), e.g. job {legacy[0]}",
            message=f"{len(legacy)} result(s) still hold their body in ZooKeeper: written by a"
            " version before results moved to blob storage, not migrated yet",
            action="the leader migrates them when it takes office; if they stay, read its log"
            " for 'result migration' (the blob storage unreachable or read-only?)",
        )


def _unreadable_bodies(snapshot: Snapshot) -> Iterator[Finding]:
    for job_id, error in sorted(snapshot.result_body_errors.items()):
        yield Finding(
            check="result-body-unreadable",
            severity=Severity.ERROR,
            subject=f"{snapshot.results[job_id].path}",
            message=f"job {job_id}'s result names a body that cannot be read: {error}",
            action="the job is still never re-run; restore the body from a backup of"
            " high-availability.storage-dir, or delete the index to drop the result (the id"
            " can then be submitted again)",
        )
