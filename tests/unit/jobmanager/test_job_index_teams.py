"""The job index's team scopes (steward.jobmanager.team_keys): a caller who sees some teams
walks only their jobs, merged newest first, with counts and Livy batches of their own."""

from __future__ import annotations

from steward.jobmanager.indexed_job import IndexedJob
from steward.jobmanager.job_index import JobIndex, JobQuery, decode_cursor
from steward.security.teams import TeamScope
from steward.wire.rest import JobView
from steward.wire.states import JobState

TEAMS = ["team-a", "team-b", "team-c", None]


def view(n: int, state: JobState = JobState.RUNNING) -> JobView:
    """Job ``n``, in team ``TEAMS[n % 4]`` (None: stored before teams)."""
    prefix = "livy" if n % 5 == 0 else "job"
    return JobView(
        job_id=f"{prefix}-{n}",
        state=state,
        submitted_at=1000.0 + n,
        team=TEAMS[n % 4],
    )


def index_of(count: int) -> JobIndex:
    return JobIndex.of(view(n) for n in range(count))


def scope(*teams: str) -> TeamScope:
    return TeamScope(frozenset(teams), "default")


def every_page(index: JobIndex, query: JobQuery) -> list[str]:
    found, after = [], None
    while True:
        page = index.page(JobQuery(**{**query.__dict__, "after": after}))
        found += [job.job_id for job in page.jobs]
        if page.next is None:
            return found
        after = decode_cursor(page.next)


def test_a_scoped_page_holds_only_its_teams_jobs_newest_first() -> None:
    index = index_of(40)
    page = index.page(JobQuery(limit=100, teams=scope("team-b")))
    assert [job.job_id.split("-")[1] for job in page.jobs] == [
        str(n) for n in range(39, -1, -1) if n % 4 == 1
    ]
    assert page.next is None
    assert {job.team for job in page.jobs} == {"team-b"}


def test_pages_of_several_teams_merge_and_cover_each_job_once() -> None:
    index = index_of(103)
    teams = scope("team-a", "default")  # default: also the jobs stored before teams
    everything = every_page(index, JobQuery(limit=7, teams=teams))
    expected = [view(n).job_id for n in range(102, -1, -1) if n % 4 in (0, 3)]
    assert everything == expected


def test_counts_are_the_scopes_own() -> None:
    index = index_of(12)
    index.put(IndexedJob.of(view(1, JobState.FINISHED)))
    counts = index.page(JobQuery(teams=scope("team-b"))).counts
    assert counts == {"RUNNING": 2, "FINISHED": 1}
    assert sum(index.page(JobQuery()).counts.values()) == 12
    assert index.page(JobQuery(teams=scope("nobody"))).counts == {}


def test_a_job_put_again_or_removed_moves_in_its_teams_lists() -> None:
    index = index_of(8)
    index.put(IndexedJob.of(view(1, JobState.FINISHED)))
    b_jobs = index.page(JobQuery(teams=scope("team-b")))
    assert [job.job_id for job in b_jobs.jobs] == ["livy-5", "job-1"]
    assert index.remove("livy-5")
    assert [j.job_id for j in index.page(JobQuery(teams=scope("team-b"))).jobs] == ["job-1"]
    assert index.page(JobQuery(teams=scope("team-b"))).counts == {"FINISHED": 1}
    assert index.batches(0, 10, scope("team-b")) == (0, [])


def test_livy_batches_are_paged_within_the_scope() -> None:
    index = index_of(60)
    total, batches = index.batches(0, 100, scope("team-a"))
    team_a = [n for n in range(60) if n % 5 == 0 and n % 4 == 0]
    assert total == len(team_a)
    assert [job.job_id for job in batches] == [f"livy-{n}" for n in team_a]
    total, second = index.batches(1, 2, scope("team-a"))
    assert [job.job_id for job in second] == [f"livy-{n}" for n in team_a[1:3]]
    assert index.batches(0, 100)[0] == 12  # unscoped: every batch
