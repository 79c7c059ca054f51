"""Sorted key lists of the job index (:mod:`.job_index`), and each team's own.

A key is ``(submitted_at, job_id)``; every list is kept sorted by :mod:`bisect`, so a page
walks down from a cursor. :class:`TeamKeys` keeps, per team, the keys, Livy batch numbers and
counts by state of its jobs: a caller who sees some teams' jobs walks their lists merged
(:func:`newest_first`) and never another team's. Jobs stored before teams are under None.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from steward.wire.livy import batch_id_of
from steward.wire.states import JobState

if TYPE_CHECKING:
    from .indexed_job import IndexedJob

Key = tuple[float, str]
_Sorted = TypeVar("_Sorted", Key, int)


class TeamKeys:
    """Each team's keys, Livy batch numbers and counts by state (jobs stored before teams
    under None)."""

    def __init__(self) -> None:
        self.keys: defaultdict[str | None, list[Key]] = defaultdict(list)
        self.batches: defaultdict[str | None, list[int]] = defaultdict(list)
        self.counts: defaultdict[str | None, Counter[JobState]] = defaultdict(Counter)

    @classmethod
    def of(cls, jobs: Iterable[tuple[Key, IndexedJob]]) -> TeamKeys:
        """The lists of ``jobs``, each with its key (the tuple the index's own lists hold)."""
        teams = cls()
        for key, job in jobs:
            teams.keys[job.team].append(key)
            teams.counts[job.team][job.state] += 1
            if (batch := batch_id_of(job.job_id)) is not None:
                teams.batches[job.team].append(batch)
        for keys in teams.keys.values():
            keys.sort()
        for numbers in teams.batches.values():
            numbers.sort()
        return teams

    def add(self, job: IndexedJob, key: Key) -> None:
        bisect.insort(self.keys[job.team], key)
        self.counts[job.team][job.state] += 1
        if (batch := batch_id_of(job.job_id)) is not None:
            bisect.insort(self.batches[job.team], batch)

    def remove(self, job: IndexedJob) -> None:
        remove_sorted(self.keys[job.team], job.key)
        self.counts[job.team][job.state] -= 1
        if (batch := batch_id_of(job.job_id)) is not None:
            remove_sorted(self.batches[job.team], batch)


def newest_first(lists: list[list[Key]], after: Key | None) -> Iterator[Key]:
    """The keys of ``lists`` (each sorted) older than ``after``, newest first, merged."""
    runs = [_down_from(keys, after) for keys in lists]
    return runs[0] if len(runs) == 1 else heapq.merge(*runs, reverse=True)


def _down_from(keys: list[Key], after: Key | None) -> Iterator[Key]:
    start = len(keys) if after is None else bisect.bisect_left(keys, after)
    return (keys[position] for position in range(start - 1, -1, -1))


def remove_sorted(keys: list[_Sorted], key: _Sorted) -> None:
    at = bisect.bisect_left(keys, key)
    if at < len(keys) and keys[at] == key:
        del keys[at]
