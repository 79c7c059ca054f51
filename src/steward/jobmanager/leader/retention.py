"""Result retention and migration: the leader's collection rounds over ``results/`` (rule 7).

One thread per term. Once the term is ready (recovery first: a failover never waits for this),
a round reads every result's index (no body); then one every
``jobmanager.results.check-interval`` if a retention limit is set. A round

1. migrates the entries an older version kept whole in ZooKeeper: body to blob storage, then
   the node replaced by its index (and a DIRTY one marked in ``dirty-results/``, its cleanup
   queued: recovery only looks there), version-checked and fenced. Idempotent (the body's key
   is its checksum) and resumable: a leader that dies half-way leaves entries of both formats,
   which every reader accepts, and the next leader's first round finishes the work;
2. removes the CLEAN results the policy no longer keeps (:func:`expired`), index first then
   body, each removal fenced and version-checked. A DIRTY result is never removed: its job's
   cleanup is not done. Once a result is removed nothing remembers the job: its id may be
   submitted again and starts a new job (docs/operations.md, "Results for years").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from steward.config import ResultSettings
from steward.errors import FencedError, StewardError
from steward.store.result_index import ResultNode
from steward.wire.states import CleanupStatus

from .stores import LeaderStores
from .term import Term

log = logging.getLogger(__name__)


def expired(nodes: Iterable[ResultNode], now: float, policy: ResultSettings) -> list[ResultNode]:
    """The CLEAN results ``policy`` no longer keeps, oldest first: those older than its
    max age, then the oldest until at most max count results remain. DIRTY ones stay."""
    every = list(nodes)
    clean = sorted(
        (node for node in every if node.status is CleanupStatus.CLEAN),
        key=lambda node: (node.finished_at, node.job_id),
    )
    too_old = 0
    if policy.max_age > 0:
        too_old = sum(1 for node in clean if now - node.finished_at > policy.max_age)
    too_many = max(0, len(every) - policy.max_count) if policy.max_count > 0 else 0
    return clean[: max(too_old, min(too_many, len(clean)))]


class ResultRetention:
    def __init__(self, term: Term, stores: LeaderStores, resume: Callable[[str], None]) -> None:
        """``resume``: queue a job's cleanup (a DIRTY entry found by the migration)."""
        self._term = term
        self._stores = stores
        self._resume = resume
        self._policy = term.settings.results

    def run(self) -> None:
        """The retention thread: a round once the term is ready, then one every interval."""
        stopped = self._term.stopped
        while not self._term.ready.wait(1.0):
            if stopped.is_set():
                return
        limited = self._policy.max_age > 0 or self._policy.max_count > 0
        done = False  # without a limit, one round per term (the migration) is enough
        while not stopped.is_set() and (limited or not done):
            try:
                self.round()
                done = True
            except FencedError as exc:
                self._term.fenced(exc)
                return
            except StewardError as exc:
                log.warning(
                    "result retention round failed epoch=%d error=%s", self._term.epoch, exc
                )
            stopped.wait(self._policy.check_interval)

    def round(self) -> dict[str, int]:
        """Migrate legacy entries, remove expired results; the counts of each."""
        nodes = self._stores.results.nodes()
        self._resume_unmarked(nodes)
        migrated = self._migrate([node for node in nodes if node.legacy is not None])
        removed = 0
        for node in expired(nodes, self._term.wall(), self._policy):
            if self._term.stopped.is_set():
                break
            if self._stores.graphs.contains(node.job_id):
                continue  # its pointer came back (doctor: pointer-of-finished-job): cleanup's
            removed += self._stores.results.remove(self._term.fence, node)
        if migrated or removed:
            log.info(
                "result retention round epoch=%d results=%d migrated=%d removed=%d",
                self._term.epoch,
                len(nodes),
                migrated,
                removed,
            )
        return {"results": len(nodes), "migrated": migrated, "removed": removed}

    def _resume_unmarked(self, nodes: list[ResultNode]) -> None:
        """Queue the cleanup of DIRTY results recovery cannot see: without their mark in
        ``dirty-results/`` (an older version's entries, or a lost write)."""
        marked = set(self._stores.results.dirty_ids())
        for node in nodes:
            if node.status is CleanupStatus.DIRTY and node.job_id not in marked:
                self._resume(node.job_id)

    def _migrate(self, legacy: list[ResultNode]) -> int:
        migrated = 0
        for node in legacy:
            if self._term.stopped.is_set():
                break
            try:
                migrated += self._stores.results.migrate(self._term.fence, node.job_id)
            except FencedError:
                raise
            except StewardError as exc:  # this entry alone; the next round retries it
                log.warning("result migration failed job=%s error=%s", node.job_id, exc)
        return migrated
