"""Listing jobs page by page: ``GET /v1/jobs``'s query, and every page after a cursor.

The API answers one page (newest first) and a ``next`` cursor; a caller that wants every job
follows the cursors. A cursor is the key of a job, valid on any JobManager, so the pages go on
across a failover. A JobManager from before paging answers every job at once and no cursor:
the first page is then the whole list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

from steward.wire.rest import MAX_PAGE, JobList
from steward.wire.states import JobState


@dataclass(frozen=True)
class JobFilter:
    """What every job listed must match (None: anything)."""

    state: JobState | str | None = None
    label: str | None = None
    """``key=value``"""
    name: str | None = None
    """A prefix of the job's name."""
    submitter: str | None = None
    team: str | None = None
    """One team's jobs (among those the caller sees)."""

    def path(self, limit: int, cursor: str | None = None) -> str:
        params: dict[str, str | int] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        for key in ("state", "label", "name", "submitter", "team"):
            value = getattr(self, key)
            if value is not None:
                params[key] = str(value)
        return f"/v1/jobs?{urlencode(params)}"


def pages(
    fetch: Callable[[str], JobList], where: JobFilter, limit: int | None = None
) -> Iterator[JobList]:
    """Pages of the jobs matching ``where``, newest first, up to ``limit`` jobs (None: all)."""
    cursor, left = None, limit
    while left is None or left > 0:
        page = fetch(where.path(min(MAX_PAGE, MAX_PAGE if left is None else left), cursor))
        yield page
        if left is not None:
            left -= len(page.jobs)
        if page.next is None:
            return
        cursor = page.next
