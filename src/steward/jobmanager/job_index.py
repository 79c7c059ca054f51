"""The jobs a JobManager knows, in memory, newest first: what ``GET /v1/jobs`` pages through.

Listing used to read every status record and result from ZooKeeper and sort them all on each
request (4.55 s for 2,000 jobs through a new leader). The index holds one small
:class:`IndexedJob` per job instead, kept current by :mod:`.index_follower` from the events
every JobManager already watches, so a page costs a walk over the jobs it shows.

Invariants:

- Order is by key ``(submitted_at, job_id)``. A cursor is the key of the last job a page
  showed; a job submitted later has a larger key, so it never shifts a page already read (a
  cursor stays valid across inserts, and across JobManagers: every one has the same keys).
- A job costs one :class:`IndexedJob`: ids, name, state, times, labels, submitter, timeout
  and its latest attempt; never its result value, its attempt history nor its environment
  variables (``GET /v1/jobs/{id}`` has those). The reason is cut at :data:`MAX_REASON`;
  names, submitters and TaskManager ids are interned and equal label sets shared, since
  jobs repeat them.
- One page walks at most :data:`SCAN_BUDGET` jobs: a filter that matches rarely answers
  fewer than ``limit`` jobs and a ``next`` cursor to go on from. A state filter walks only
  that state's jobs (each state has its own key list); a caller who sees only some teams'
  jobs (:mod:`steward.security.teams`) walks only those teams' keys, merged (each team has
  its own key list, batch list and counts), so another team's 10,000 jobs cost it nothing.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import itertools
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from steward.security.teams import TeamScope
from steward.wire.livy import batch_id_of, batch_job_id
from steward.wire.rest import JobView
from steward.wire.states import JobState

from .indexed_job import IndexedJob
from .team_keys import Key, TeamKeys, newest_first, remove_sorted

SCAN_BUDGET = 20_000


@dataclass(frozen=True)
class JobQuery:
    """One page's request: every filter given must hold (``None``: any)."""

    limit: int = 100
    after: Key | None = None
    """The cursor: answer jobs older than this key."""
    state: JobState | None = None
    label: tuple[str, str] | None = None
    name_prefix: str | None = None
    submitter: str | None = None
    teams: TeamScope | None = None
    """Only these teams' jobs (None: every team's)."""

    def matches(self, job: IndexedJob) -> bool:
        if self.state is not None and job.state is not self.state:
            return False
        if self.teams is not None and not self.teams.sees(job.team):
            return False
        if self.name_prefix is not None and not job.name.startswith(self.name_prefix):
            return False
        if self.submitter is not None and job.submitter != self.submitter:
            return False
        if self.label is None:
            return True
        key, value = self.label
        return job.labels.get(key) == value


@dataclass(frozen=True)
class Page:
    jobs: list[IndexedJob]
    next: str | None
    """The cursor of the next page; None once no older job is left."""
    counts: dict[str, int] = field(default_factory=dict)
    """Every job known, by state (whatever the filters)."""


class BadCursorError(ValueError):
    """A cursor this API did not give out."""


def encode_cursor(key: Key) -> str:
    raw = json.dumps([key[0], key[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> Key:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        submitted_at, job_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise BadCursorError(f"cursor {cursor[:100]!r} was not given out by this API") from None
    if not isinstance(submitted_at, int | float) or not isinstance(job_id, str):
        raise BadCursorError(f"cursor {cursor[:100]!r} was not given out by this API")
    return (float(submitted_at), job_id)


class JobIndex:
    """Thread-safe; ``ready`` once a full read has filled it (before, callers read it all)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, IndexedJob] = {}
        self._order: list[Key] = []
        self._by_state: dict[JobState, list[Key]] = {state: [] for state in JobState}
        self._batches: list[int] = []
        self._teams = TeamKeys()
        self.ready = False

    @classmethod
    def of(cls, views: Iterable[JobView]) -> JobIndex:
        index = cls()
        index.replace_all(IndexedJob.of(view) for view in views)
        return index

    def __len__(self) -> int:
        return len(self._jobs)

    def get(self, job_id: str) -> IndexedJob | None:
        return self._jobs.get(job_id)

    def put(self, job: IndexedJob) -> None:
        with self._lock:
            before = self._jobs.get(job.job_id)
            if before is not None:
                remove_sorted(self._order, before.key)
                remove_sorted(self._by_state[before.state], before.key)
                self._teams.remove(before)
            elif (batch := batch_id_of(job.job_id)) is not None:
                bisect.insort(self._batches, batch)
            self._jobs[job.job_id] = job
            key = job.key  # one tuple, in every list
            bisect.insort(self._order, key)
            bisect.insort(self._by_state[job.state], key)
            self._teams.add(job, key)

    def remove(self, job_id: str) -> bool:
        """Forget a job (its result was removed by a retention policy); False if unknown."""
        with self._lock:
            job = self._jobs.pop(job_id, None)
            if job is None:
                return False
            remove_sorted(self._order, job.key)
            remove_sorted(self._by_state[job.state], job.key)
            if (batch := batch_id_of(job_id)) is not None:
                remove_sorted(self._batches, batch)
            self._teams.remove(job)
            return True

    def replace_all(self, jobs: Iterable[IndexedJob]) -> None:
        """Swap in a full read (the start, or a re-read after missed events)."""
        by_id = {job.job_id: job for job in jobs}
        keyed = [(job.key, job) for job in by_id.values()]  # one key tuple, in every list
        by_state: dict[JobState, list[Key]] = {state: [] for state in JobState}
        for key, job in keyed:
            by_state[job.state].append(key)
        for keys in by_state.values():
            keys.sort()
        order = sorted(key for key, _ in keyed)
        batches = sorted(b for b in map(batch_id_of, by_id) if b is not None)
        teams = TeamKeys.of(keyed)
        with self._lock:
            self._jobs, self._order, self._by_state = by_id, order, by_state
            self._batches, self._teams = batches, teams
            self.ready = True

    def batches(
        self, offset: int, size: int, teams: TeamScope | None = None
    ) -> tuple[int, list[IndexedJob]]:
        """Livy batches ``offset`` to ``offset + size`` by batch id, and how many there are
        (of ``teams`` only, if given)."""
        with self._lock:
            if teams is None:
                numbers, total = self._batches[offset : offset + size], len(self._batches)
            else:
                lists = [self._teams.batches.get(team, []) for team in teams.stored_as()]
                total = sum(map(len, lists))
                numbers = list(itertools.islice(heapq.merge(*lists), offset, offset + size))
            return total, [self._jobs[batch_job_id(n)] for n in numbers]

    def page(self, query: JobQuery) -> Page:
        with self._lock:
            keys = newest_first(self._lists(query), query.after)
            found, next_key = self._walk(keys, query)
            counts = self._counts(query.teams)
        return Page(found, None if next_key is None else encode_cursor(next_key), counts)

    def _lists(self, query: JobQuery) -> list[list[Key]]:
        """The key lists that hold every job ``query`` may match (the shortest way there)."""
        if query.state is not None:
            return [self._by_state[query.state]]
        if query.teams is not None:
            return [self._teams.keys.get(team, []) for team in query.teams.stored_as()]
        return [self._order]

    def _counts(self, teams: TeamScope | None) -> dict[str, int]:
        """Jobs by state: every job known, or only ``teams``' (another team's are no one
        else's business, not even how many)."""
        if teams is None:
            return {state.value: len(k) for state, k in self._by_state.items() if k}
        total: Counter[JobState] = Counter()
        for team in teams.stored_as():
            total.update(self._teams.counts.get(team, Counter()))
        return {state.value: n for state, n in total.items() if n}

    def _walk(self, keys: Iterator[Key], query: JobQuery) -> tuple[list[IndexedJob], Key | None]:
        """Jobs matching ``query`` from ``keys`` (newest first), and the key of the last job
        walked if older ones are left (the next page's cursor)."""
        found: list[IndexedJob] = []
        last = None
        for walked, key in enumerate(keys):
            if walked == SCAN_BUDGET:
                return found, last
            last = key
            job = self._jobs[key[1]]
            if query.matches(job):
                found.append(job)
                if len(found) == query.limit:
                    return found, key if next(keys, None) is not None else None
        return found, None
